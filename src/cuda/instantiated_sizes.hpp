#pragma once
// The mask sizes the kernels written over samples are compiled for, one list per kernel family: the only
// place they are written. src/cuda/CMakeLists.txt reads these lists (cmake/ApronInstantiations.cmake) to
// generate the files that instantiate the kernels (instantiations/<family>_g<file>_c<channels>.cu, channel
// counts 1-4) and the extern declarations of those instantiations; the dispatch (with_size.hpp) picks its
// size from the same list, so it can call no size that is not compiled (the generated declarations check
// that CMake read what C++ reads).
//
// An entry is {size, file}: `file` numbers the generated file (per family, from 0, none skipped) that compiles
// the size, so the files compile side by side. The grouping was measured for build time (3x3 and 5x5 for
// every channel count in one file took 485 s on the GPU machine's 16 cores): the sizes of one file compile
// one after the other. CMake reads each array by its name, the {size, file} pairs between its braces and nothing else
// (comments aside): keep the form `inline constexpr InstantiatedSize name[] = {{size, file}, ...};`.
#include <cstddef>

namespace apron::cuda {

struct InstantiatedSize {
    int size;
    int file;
};

// Direct kernels (register and tiled, direct_regs_impl.cuh): odd square masks, K x K.
inline constexpr InstantiatedSize direct_tiled_sizes[] = {
    {3, 0}, {5, 1}, {7, 2}, {9, 2}, {11, 3}, {13, 3}, {15, 3}, {17, 3},
    {19, 4}, {21, 4}, {23, 4}, {25, 5}, {27, 5}, {29, 6}, {31, 6},
};

// Fused separable kernel (separable_fused_impl.cuh): radius buckets, the factors padded with zero taps to the
// smallest bucket that covers them. Float accumulation, then int32 (exact plans past 2^24); a generated file
// holds the float buckets of its number, then the int32 ones.
inline constexpr InstantiatedSize separable_f32_radii[] = {
    {1, 0}, {2, 0}, {3, 0}, {4, 1}, {5, 1}, {6, 1}, {7, 2}, {8, 2}, {9, 2}, {10, 2},
    {12, 2}, {14, 3}, {16, 3}, {18, 3}, {20, 3}, {22, 4}, {24, 4}, {28, 5}, {32, 5},
};
inline constexpr InstantiatedSize separable_i32_radii[] = {
    {1, 0}, {2, 0}, {3, 0}, {4, 1}, {6, 1}, {8, 2}, {12, 2}, {16, 3}, {24, 4}, {32, 5},
};

// ---- what the dispatch relies on -------------------------------------------------------------------------

// Sizes in increasing order: the smallest bucket that covers a radius is the first one that does.
template <std::size_t N>
constexpr bool strictly_increasing(const InstantiatedSize (&list)[N]) {
    for (std::size_t i = 1; i < N; ++i)
        if (list[i].size <= list[i - 1].size) return false;
    return true;
}

template <std::size_t N>
constexpr int largest_size(const InstantiatedSize (&list)[N]) {
    return list[N - 1].size;
}

template <std::size_t N>
constexpr bool has_size(const InstantiatedSize (&list)[N], int size) {
    for (const InstantiatedSize& s : list)
        if (s.size == size) return true;
    return false;
}

// Whether `list` holds exactly `sizes`, in order: the generated extern declarations state the sizes CMake
// read, and check them against the list here with it.
template <std::size_t N, std::size_t M>
constexpr bool sizes_are(const InstantiatedSize (&list)[N], const int (&sizes)[M]) {
    if (N != M) return false;
    for (std::size_t i = 0; i < N; ++i)
        if (list[i].size != sizes[i]) return false;
    return true;
}

static_assert(strictly_increasing(direct_tiled_sizes) && strictly_increasing(separable_f32_radii) &&
              strictly_increasing(separable_i32_radii));

} // namespace apron::cuda
