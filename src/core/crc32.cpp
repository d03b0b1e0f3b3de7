// CRC-32 by carry-less multiply folding (crc32.hpp).
//
// Reflected bit order throughout: a 16-byte block loaded little-endian holds the coefficient of x^127 in
// bit 0. Multiplying a block by x^D (moving it D bits further along the message) is, mod P, two 64x33-bit
// carry-less products: low qword times (x^(D+32) mod P), high qword times (x^(D-32) mod P), each constant
// reflected with x^0 at bit 32. The end reduces the last 128 bits to 32 (x^96, x^64 mod P), then Barrett
// (mu = floor(x^64 / P)). The constants below were computed as x^k mod P in GF(2) and checked against zlib.
#include "core/crc32.hpp"

#include <array>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define APRON_CRC32_X86 1
#include <immintrin.h>
#endif

namespace apron {

namespace {

// ---- the portable path: slicing-by-8 ----

using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
    Tables t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        t[0][i] = c;
    }
    // t[k][i]: byte i followed by k zero bytes.
    for (std::size_t k = 1; k < 8; ++k)
        for (std::size_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    return t;
}

constexpr Tables kTables = make_tables();

std::uint32_t crc_portable(std::uint32_t crc, const unsigned char* p, std::size_t n) {
    std::uint32_t c = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        // Byte by byte, so big-endian hosts read the same order (one load on little-endian ones).
        const std::uint32_t a = c ^ (std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
                                     std::uint32_t(p[3]) << 24);
        const std::uint32_t b = std::uint32_t(p[4]) | std::uint32_t(p[5]) << 8 | std::uint32_t(p[6]) << 16 |
                                std::uint32_t(p[7]) << 24;
        c = kTables[7][a & 0xff] ^ kTables[6][(a >> 8) & 0xff] ^ kTables[5][(a >> 16) & 0xff] ^ kTables[4][a >> 24] ^
            kTables[3][b & 0xff] ^ kTables[2][(b >> 8) & 0xff] ^ kTables[1][(b >> 16) & 0xff] ^ kTables[0][b >> 24];
    }
    for (; n > 0; ++p, --n) c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xff];
    return ~c;
}

#ifdef APRON_CRC32_X86

// Fold constants for a move of D bits: {x^(D+32) mod P, x^(D-32) mod P}, reflected (33 bits).
constexpr long long kFold128Lo = 0x1751997d0, kFold128Hi = 0x0ccaa009e;
constexpr long long kFold256Lo = 0x0f1da05aa, kFold256Hi = 0x15a546366;
constexpr long long kFold384Lo = 0x03db1ecdc, kFold384Hi = 0x174359406;
constexpr long long kFold512Lo = 0x154442bd4, kFold512Hi = 0x1c6e41596;
constexpr long long kFold2048Lo = 0x11542778a, kFold2048Hi = 0x1322d1430;
// The final reduction: x^96 mod P, x^64 mod P, floor(x^64 / P), P itself (reflected, 33 bits).
constexpr long long kX96 = 0x0ccaa009e, kX64 = 0x163cd6124, kMu = 0x1f7011641, kP = 0x1db710641;

#define APRON_PCLMUL __attribute__((target("pclmul,sse4.1")))
#define APRON_VPCLMUL __attribute__((target("pclmul,sse4.1,avx512f,vpclmulqdq")))
#define APRON_INLINE inline __attribute__((always_inline))

APRON_PCLMUL APRON_INLINE __m128i load16(const unsigned char* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// x moved by D bits (k holds D's constants), plus the block that lies there.
APRON_PCLMUL APRON_INLINE __m128i fold16(__m128i x, __m128i k, __m128i data) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data);
}

// The 32-bit CRC register (not inverted) of a 128-bit remainder r: (r * x^32) mod P.
APRON_PCLMUL APRON_INLINE std::uint32_t reduce128(__m128i r) {
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    const __m128i k = _mm_set_epi64x(kX64, kX96);
    const __m128i barrett = _mm_set_epi64x(kP, kMu);
    // 128 -> 96 bits (x^95 at bit 0), then -> 64 bits (x^63 at bit 0).
    const __m128i s = _mm_xor_si128(_mm_clmulepi64_si128(r, k, 0x00), _mm_srli_si128(r, 8));
    const __m128i u = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(s, mask32), k, 0x10), _mm_srli_si128(s, 4));
    // Barrett: q = floor(u / P) from u's top 32 bits; u - q*P leaves the remainder in bits 32..63.
    const __m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(u, mask32), barrett, 0x00), mask32);
    const __m128i t = _mm_xor_si128(_mm_clmulepi64_si128(q, barrett, 0x10), u);
    return std::uint32_t(_mm_extract_epi32(t, 1));
}

// The rest after the wide loops: 16-byte blocks, then the last < 16 bytes by table.
APRON_PCLMUL APRON_INLINE std::uint32_t finish(__m128i x, const unsigned char* p, std::size_t n) {
    const __m128i k128 = _mm_set_epi64x(kFold128Hi, kFold128Lo);
    for (; n >= 16; p += 16, n -= 16)
        x = fold16(x, k128, load16(p));
    return crc_portable(~reduce128(x), p, n);
}

APRON_PCLMUL std::uint32_t crc_pclmul(std::uint32_t crc, const unsigned char* p, std::size_t n) {
    if (n < 64) return crc_portable(crc, p, n);
    // Four independent chains hide the multiply's latency; the initial CRC goes into the first 32 bits.
    __m128i x0 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128(int(~crc)));
    __m128i x1 = load16(p + 16), x2 = load16(p + 32), x3 = load16(p + 48);
    p += 64;
    n -= 64;
    const __m128i k512 = _mm_set_epi64x(kFold512Hi, kFold512Lo);
    for (; n >= 64; p += 64, n -= 64) {
        x0 = fold16(x0, k512, load16(p));
        x1 = fold16(x1, k512, load16(p + 16));
        x2 = fold16(x2, k512, load16(p + 32));
        x3 = fold16(x3, k512, load16(p + 48));
    }
    const __m128i k128 = _mm_set_epi64x(kFold128Hi, kFold128Lo);
    const __m128i x = fold16(fold16(fold16(x0, k128, x1), k128, x2), k128, x3);
    return finish(x, p, n);
}

APRON_VPCLMUL APRON_INLINE __m512i load64(const unsigned char* p) { return _mm512_loadu_si512(p); }

// 64 bytes (four 16-byte blocks) moved by D bits, plus the 64 bytes that lie there.
APRON_VPCLMUL APRON_INLINE __m512i fold64(__m512i z, __m512i k, __m512i data) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00), _mm512_clmulepi64_epi128(z, k, 0x11), data,
                                     0x96);  // a ^ b ^ c
}

APRON_VPCLMUL std::uint32_t crc_vpclmul512(std::uint32_t crc, const unsigned char* p, std::size_t n) {
    if (n < 256) return crc_pclmul(crc, p, n);
    __m512i z0 = _mm512_xor_si512(load64(p), _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128(int(~crc)), 0));
    __m512i z1 = load64(p + 64), z2 = load64(p + 128), z3 = load64(p + 192);
    p += 256;
    n -= 256;
    const __m512i k2048 = _mm512_set_epi64(kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo,
                                           kFold2048Hi, kFold2048Lo);
    for (; n >= 256; p += 256, n -= 256) {
        z0 = fold64(z0, k2048, load64(p));
        z1 = fold64(z1, k2048, load64(p + 64));
        z2 = fold64(z2, k2048, load64(p + 128));
        z3 = fold64(z3, k2048, load64(p + 192));
    }
    const __m512i k512 = _mm512_set_epi64(kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo,
                                          kFold512Hi, kFold512Lo);
    __m512i z = fold64(fold64(fold64(z0, k512, z1), k512, z2), k512, z3);
    for (; n >= 64; p += 64, n -= 64) z = fold64(z, k512, load64(p));
    // The four blocks to one: each moved to the last block's place (384, 256, 128 bits; the last stays).
    const __m512i k = _mm512_set_epi64(0, 0, kFold128Hi, kFold128Lo, kFold256Hi, kFold256Lo, kFold384Hi, kFold384Lo);
    const __m512i t = _mm512_xor_si512(_mm512_clmulepi64_epi128(z, k, 0x00), _mm512_clmulepi64_epi128(z, k, 0x11));
    // Through memory: GCC 12 warns (wrongly) about the extract intrinsics' undefined fill.
    alignas(64) __m128i tl[4], zl[4];
    _mm512_store_si512(tl, t);
    _mm512_store_si512(zl, z);
    const __m128i x = _mm_xor_si128(_mm_xor_si128(tl[0], tl[1]), _mm_xor_si128(tl[2], zl[3]));
    _mm256_zeroupper();  // the callers' SSE code would pay for dirty upper halves (GCC 12 leaves them here)
    return finish(x, p, n);
}

#endif  // APRON_CRC32_X86

using KernelFn = std::uint32_t (*)(std::uint32_t, const unsigned char*, std::size_t);

KernelFn kernel_fn(Crc32Kernel kernel) {
    switch (kernel) {
#ifdef APRON_CRC32_X86
    case Crc32Kernel::pclmul: return crc_pclmul;
    case Crc32Kernel::vpclmul512: return crc_vpclmul512;
#endif
    default: return crc_portable;
    }
}

Crc32Kernel best_kernel() {
    for (const Crc32Kernel k : {Crc32Kernel::vpclmul512, Crc32Kernel::pclmul})
        if (crc32_kernel_supported(k)) return k;
    return Crc32Kernel::portable;
}

}  // namespace

bool crc32_kernel_supported(Crc32Kernel kernel) {
    switch (kernel) {
    case Crc32Kernel::portable: return true;
#ifdef APRON_CRC32_X86
    case Crc32Kernel::pclmul:
        __builtin_cpu_init();  // may run before the constructors that would do it
        return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    case Crc32Kernel::vpclmul512:
        // avx512f also says the OS saves the 512-bit registers.
        return crc32_kernel_supported(Crc32Kernel::pclmul) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("vpclmulqdq");
#endif
    default: return false;
    }
}

Crc32Kernel crc32_kernel() {
    static const Crc32Kernel chosen = best_kernel();
    return chosen;
}

std::uint32_t crc32_update_with(Crc32Kernel kernel, std::uint32_t crc, const void* data, std::size_t n) {
    return kernel_fn(kernel)(crc, static_cast<const unsigned char*>(data), n);
}

std::uint32_t crc32_update_fast(std::uint32_t crc, const void* data, std::size_t n) {
    static const KernelFn fn = kernel_fn(crc32_kernel());
    return fn(crc, static_cast<const unsigned char*>(data), n);
}

}  // namespace apron
