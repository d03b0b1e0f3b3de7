#pragma once
// Page-locked host memory. It comes from the CUDA backend, but the core calls no layer above it: it calls the
// hooks the run layer installs (run/backends.cpp), and without them (a build without CUDA, or a program that
// links the core alone) allocate_pinned gives nullptr and the caller falls back to pageable memory.
#include <cstddef>
#include <utility>

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

namespace apron {

// Bytes on the host, page-locked where the CUDA backend can give them (so copies to a GPU run at the PCIe
// rate straight from them), pageable otherwise, never zero-filled: a batch reads a file into it, the bytes
// are overwritten anyway. Freed blocks of pinned memory go back to the backend's cache for the next image.
class HostBuffer {
public:
    HostBuffer() = default;
    // Throws std::bad_alloc when neither kind of memory can be had.
    HostBuffer(std::size_t bytes, bool want_pinned);
    HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
    HostBuffer& operator=(HostBuffer&& o) noexcept;
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;
    ~HostBuffer() { reset(); }

    unsigned char* data() const { return data_; }
    std::size_t size() const { return size_; }
    bool pinned() const { return pinned_; }
    void reset();

private:
    unsigned char* data_ = nullptr;
    std::size_t size_ = 0;
    bool pinned_ = false;
};

} // namespace apron
