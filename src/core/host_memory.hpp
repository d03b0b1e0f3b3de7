#pragma once
// Page-locked host memory, from the CUDA backend when it is built and a device is present.
#include <cstddef>

namespace apron {

// nullptr when pinned memory cannot be had (no CUDA build, no device, or the driver refused); the caller
// then falls back to pageable memory.
void* allocate_pinned(std::size_t bytes);
void free_pinned(void* p);
// Freed blocks are kept for the next request of their size (a batch's images are mostly of one size):
// a caller that counts its memory against a budget (the band engine) releases them for real.
void release_kept_pinned();
// Bytes of freed pinned blocks the cache keeps now.
std::size_t kept_pinned_bytes();
// Whether p points into page-locked host memory the CUDA backend can copy from asynchronously.
bool is_pinned(const void* p);

} // namespace apron
