#pragma once
// Large host blocks kept between calls for the CPU executor's intermediates (an opening's erosion, a
// top-hat's opening). A fresh block is paid in page faults on its first touch, which cost more than a fast
// filter's own work: 4096^2 u8 tophat, 5x5 rect, one thread, 14.8 ms of which the filters are about 5. A
// block freed here goes back to a process-wide cache and the next request of the same size takes it,
// already backed by memory. The cache holds at most host_block_cache_limit() bytes; beyond that, blocks are
// freed as usual.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace apron::cpu {

// `bytes` of 64-byte aligned, uninitialised host memory, given back to the cache when the last owner goes.
// Throws std::bad_alloc when none can be had.
std::shared_ptr<std::byte> take_host_block(std::size_t bytes);

// Bytes the cache may hold: an eighth of physical memory, at most 2 GiB.
std::uint64_t host_block_cache_limit();
// Bytes it holds now (for tests), and a way to free them all.
std::uint64_t host_blocks_kept();
void release_host_blocks();

} // namespace apron::cpu
