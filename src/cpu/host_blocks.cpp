// The host block cache (host_blocks.hpp).
#include "cpu/host_blocks.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace apron::cpu {
namespace {

// Smaller blocks come from malloc's own free lists; the cache is for those glibc maps and unmaps afresh.
constexpr std::size_t smallest_kept = std::size_t(1) << 20;
constexpr std::size_t huge_page = std::size_t(2) << 20;

struct BlockCache {
    std::mutex mutex;
    std::multimap<std::size_t, void*> free;  // by size
    std::uint64_t kept = 0;
    pid_t owner = ::getpid();
};

BlockCache& cache() {
    static BlockCache* c = new BlockCache;  // never destroyed: blocks may come back during static destruction
    return *c;
}

std::uint64_t limit() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const std::uint64_t physical = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
    return std::min<std::uint64_t>(physical / 8, std::uint64_t(2) << 30);
}

void* allocate(std::size_t bytes) {
    // Blocks of whole huge pages start on one, so that transparent huge pages can back all of them.
    const std::size_t align = bytes >= 2 * huge_page ? huge_page : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == huge_page) ::madvise(p, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    return p;
}

void give_back(void* p, std::size_t bytes) {
    BlockCache& c = cache();
    {
        std::lock_guard lock(c.mutex);
        if (c.owner == ::getpid() && c.kept + bytes <= limit()) {
            c.free.emplace(bytes, p);
            c.kept += bytes;
            return;
        }
    }
    std::free(p);
}

} // namespace

std::shared_ptr<std::byte> take_host_block(std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 1);
    if (bytes < smallest_kept) {
        void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) throw std::bad_alloc();
        return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
    }
    void* p = nullptr;
    {
        BlockCache& c = cache();
        std::lock_guard lock(c.mutex);
        if (c.owner != ::getpid()) {  // a forked child: the parent's list is a copy; start afresh
            c.free.clear();
            c.kept = 0;
            c.owner = ::getpid();
        }
        if (auto it = c.free.find(bytes); it != c.free.end()) {
            p = it->second;
            c.free.erase(it);
            c.kept -= bytes;
        }
    }
    if (!p) p = allocate(bytes);
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [bytes](std::byte* q) { give_back(q, bytes); });
}

std::uint64_t host_block_cache_limit() { return limit(); }

std::uint64_t host_blocks_kept() {
    BlockCache& c = cache();
    std::lock_guard lock(c.mutex);
    return c.kept;
}

void release_host_blocks() {
    std::vector<void*> blocks;
    {
        BlockCache& c = cache();
        std::lock_guard lock(c.mutex);
        for (auto& [bytes, p] : c.free) blocks.push_back(p);
        c.free.clear();
        c.kept = 0;
    }
    for (void* p : blocks) std::free(p);
}

} // namespace apron::cpu
