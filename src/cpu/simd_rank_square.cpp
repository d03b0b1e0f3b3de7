// The square rank sweeps (simd_rank.hpp): which (k, rank) have one, and the call by key type (the sweeps
// themselves: simd_rank_square-inl.h, one file per key type).
#include "cpu/simd_rank.hpp"

namespace apron::cpu::simd {

void rank_sweep_square_u8(const RankSquareSweep& a);
void rank_sweep_square_u16(const RankSquareSweep& a);
void rank_sweep_square_f32(const RankSquareSweep& a);

bool rank_square_compiled(int k, int rank) {
    if (rank < 0 || rank >= k * k) return false;
#if APRON_RANK_SQUARE_MEDIANS_ONLY
    return (k == 3 || k == 5 || k == 7) && rank == k * k / 2;
#else
    return k == 3 || k == 5 || (k == 7 && rank == 24);
#endif
}

void rank_sweep_square(const RankSquareSweep& a) {
    if (a.key_bytes == 1) rank_sweep_square_u8(a);
    else if (a.key_bytes == 2) rank_sweep_square_u16(a);
    else rank_sweep_square_f32(a);
}

} // namespace apron::cpu::simd
