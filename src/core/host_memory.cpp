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
