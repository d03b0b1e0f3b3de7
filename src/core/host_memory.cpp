// The pinned memory hooks (host_memory.hpp).
#include "core/host_memory.hpp"

#include <atomic>

namespace apron {
namespace {

std::atomic<void* (*)(std::size_t)> allocate_hook{nullptr};
std::atomic<void (*)(void*)> free_hook{nullptr};

} // namespace

void install_pinned_memory(PinnedMemoryHooks hooks) {
    free_hook.store(hooks.free);
    allocate_hook.store(hooks.allocate);
}

void* allocate_pinned(std::size_t bytes) {
    void* (*allocate)(std::size_t) = allocate_hook.load();
    return allocate ? allocate(bytes) : nullptr;
}

void free_pinned(void* p) {
    if (void (*free)(void*) = free_hook.load(); p && free) free(p);
}

} // namespace apron

namespace apron {

HostBuffer::HostBuffer(std::size_t bytes, bool want_pinned) : size_(bytes) {
    if (want_pinned && bytes > 0) data_ = static_cast<unsigned char*>(allocate_pinned(bytes));
    pinned_ = data_ != nullptr;
    if (!data_) data_ = new unsigned char[bytes > 0 ? bytes : 1];  // default-initialised: no zero fill
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
        reset();
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        pinned_ = std::exchange(o.pinned_, false);
    }
    return *this;
}

void HostBuffer::reset() {
    if (data_) {
        if (pinned_) free_pinned(data_);
        else delete[] data_;
    }
    data_ = nullptr;
    size_ = 0;
    pinned_ = false;
}

} // namespace apron
