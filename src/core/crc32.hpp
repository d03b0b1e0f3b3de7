#pragma once
// CRC-32 exactly as zlib's crc32() computes it (reflected polynomial 0xEDB88320, inverted in and out), so
// CRCs stored by earlier versions (batch manifests, stream resume checks) stay valid. Folds with carry-less
// multiplies where the CPU has them (PCLMULQDQ, or VPCLMULQDQ with AVX-512), chosen at run time; a
// table-driven CRC elsewhere. The core does not link zlib, hence its own fallback.
#include <cstddef>
#include <cstdint>

namespace apron {

// zlib's crc32(crc, data, n): start with crc = 0; crc32_update_fast(crc32_update_fast(0, a), b) is the CRC
// of a then b. Any n (no 32-bit length limit).
std::uint32_t crc32_update_fast(std::uint32_t crc, const void* data, std::size_t n);

// The implementations, for tests: each gives the same result as crc32_update_fast.
enum class Crc32Kernel { portable, pclmul, vpclmul512 };
bool crc32_kernel_supported(Crc32Kernel kernel);  // this build and this CPU can run it
Crc32Kernel crc32_kernel();                       // the one crc32_update_fast uses
// `kernel` must be supported.
std::uint32_t crc32_update_with(Crc32Kernel kernel, std::uint32_t crc, const void* data, std::size_t n);

} // namespace apron
