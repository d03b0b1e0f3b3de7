// Chord decomposition of flat structuring elements and the cost model that picks the morphology algorithm.
//
// Cost model, in shared-memory read equivalents per output sample, for a W x H element of `cells` set
// cells, `chords` runs and longest chord Lmax:
//  - direct (the generic kernels): every mask cell is visited (one table read and a branch), and every set
//    cell is a read through L1 with its bounds test, about 4 shared reads: W*H + 4*cells.
//    Calibration: disk:7 (225 cells visited, 177 set) ran at 4.8 Gpix/s on the H200, rect 7x7 at 839.
//  - chords (Urbach-Wilkinson tables in a shared tile of ~64 x 64 outputs): staging 1 read + 2 writes per
//    staged sample, each of the log2(Lmax) doubling levels 2 reads + 1 write per staged sample, times the
//    halo factor (1 + (W-1)/64)(1 + (H-1)/64); then 2 reads per chord (1 when its length is a power of
//    two). disk:7 (15 chords, Lmax 15): 26 + 1.48 x 12 ~ 44 against direct 225 + 708 = 933.
//  - separable_rect (full elements): O(1) per sample whatever the size (van Herk / Gil-Werman): ~10.
// Chords then win for every element the chord kernels take, sparse ones included (two cells 63 apart: ~18
// against direct 4104): direct remains for elements over max_chords chords or max_chord_side per side.
#include "plan/morph_decompose.hpp"

#include <algorithm>
#include <bit>

namespace apron {

std::vector<MorphChord> element_chords(const Mask& e) {
    std::vector<MorphChord> chords;
    for (int j = 0; j < e.height; ++j)
        for (int i = 0; i < e.width;) {
            if (e.at(i, j) == 0) {
                ++i;
                continue;
            }
            int k = i;
            while (k < e.width && e.at(k, j) != 0) ++k;
            chords.push_back(MorphChord{j - e.anchor_y, i - e.anchor_x, k - i});
            i = k;
        }
    return chords;
}

int chord_power(int length) { return int(std::bit_floor(unsigned(std::max(length, 1)))); }

namespace {

double chord_cost(const std::vector<MorphChord>& chords, const Mask& e) {
    int longest = 1;
    double reads = 0;
    for (const MorphChord& c : chords) {
        longest = std::max(longest, c.length);
        reads += chord_power(c.length) == c.length ? 1 : 2;
    }
    const double halo = (1 + (e.width - 1) / 64.0) * (1 + (e.height - 1) / 64.0);
    const double levels = std::bit_width(unsigned(longest)) - 1;  // doublings: tables 2, 4, .. <= Lmax
    return reads + halo * (3 + 3 * levels);
}

double direct_cost(const Mask& e, double cells) { return double(e.width) * e.height + 4 * cells; }

} // namespace

void decompose_element(MorphPlan& p, bool full) {
    const Mask& e = p.step.element;
    p.chords.clear();
    p.algorithm = full && e.weights.size() > 1 ? MorphAlgorithm::separable_rect : MorphAlgorithm::direct;
    if (full || e.width > max_chord_side || e.height > max_chord_side) return;  // no scan of huge elements
    const auto cells = std::count_if(e.weights.begin(), e.weights.end(), [](double w) { return w != 0; });
    std::vector<MorphChord> chords = element_chords(e);
    if (chords.size() > std::size_t(max_chords) || chord_cost(chords, e) >= direct_cost(e, double(cells))) return;
    p.algorithm = MorphAlgorithm::chords;
    p.chords = std::move(chords);
}

} // namespace apron
