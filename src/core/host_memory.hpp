#pragma once
// Page-locked host memory. It comes from the CUDA backend, but the core calls no layer above it: it calls the
// hooks the run layer installs (run/backends.cpp), and without them (a build without CUDA, or a program that
// links the core alone) allocate_pinned gives nullptr and the caller falls back to pageable memory.
#include <cstddef>

namespace apron {

struct PinnedMemoryHooks {
    void* (*allocate)(std::size_t bytes) = nullptr;  // nullptr when it cannot (no device, the driver refused)
    void (*free)(void* p) = nullptr;
};
void install_pinned_memory(PinnedMemoryHooks hooks);

// nullptr when pinned memory cannot be had; the caller then falls back to pageable memory.
void* allocate_pinned(std::size_t bytes);
void free_pinned(void* p);

} // namespace apron
