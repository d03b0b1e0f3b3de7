// core/crc32: every implementation this CPU can run gives zlib's crc32() to the bit (stored manifests and
// resume checks hold zlib's CRCs), at every length and alignment, in one call or in pieces.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/crc32.hpp"

using namespace apron;

namespace {

std::uint32_t zlib_crc(std::uint32_t crc, const unsigned char* p, std::size_t n) {
    return std::uint32_t(::crc32(uLong(crc), p, uInt(n)));  // the tests' lengths fit uInt
}

std::vector<unsigned char> random_bytes(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<unsigned char> v(n);
    for (auto& b : v) b = static_cast<unsigned char>(rng());
    return v;
}

std::string name(Crc32Kernel k) {
    switch (k) {
    case Crc32Kernel::portable: return "portable";
    case Crc32Kernel::pclmul: return "pclmul";
    case Crc32Kernel::vpclmul512: return "vpclmul512";
    }
    return "?";
}

// The kernels this machine runs; the portable one always.
std::vector<Crc32Kernel> kernels() {
    std::vector<Crc32Kernel> ks;
    for (const Crc32Kernel k : {Crc32Kernel::portable, Crc32Kernel::pclmul, Crc32Kernel::vpclmul512})
        if (crc32_kernel_supported(k)) ks.push_back(k);
    return ks;
}

}  // namespace

TEST(Crc32, KnownVectors) {
    const std::string check = "123456789";
    for (const Crc32Kernel k : kernels()) {
        SCOPED_TRACE(name(k));
        EXPECT_EQ(crc32_update_with(k, 0, check.data(), check.size()), 0xCBF43926u);
        EXPECT_EQ(crc32_update_with(k, 0, nullptr, 0), 0u);
        EXPECT_EQ(crc32_update_with(k, 0x12345678u, nullptr, 0), 0x12345678u);
    }
    EXPECT_EQ(crc32_update_fast(0, check.data(), check.size()), 0xCBF43926u);
}

TEST(Crc32, PortablePathIsAlwaysThereAndFastUsesTheBestKernel) {
    EXPECT_TRUE(crc32_kernel_supported(Crc32Kernel::portable));
    EXPECT_TRUE(crc32_kernel_supported(crc32_kernel()));
    if (crc32_kernel_supported(Crc32Kernel::vpclmul512)) EXPECT_EQ(crc32_kernel(), Crc32Kernel::vpclmul512);
    else if (crc32_kernel_supported(Crc32Kernel::pclmul)) EXPECT_EQ(crc32_kernel(), Crc32Kernel::pclmul);
    else EXPECT_EQ(crc32_kernel(), Crc32Kernel::portable);
}

// Lengths 0..300 at start offsets 0..15 cross every threshold of the folding paths (64 and 256 bytes) with
// every 16-byte remainder; longer lengths at two offsets give every mix of 256-, 64- and 16-byte steps.
TEST(Crc32, MatchesZlibAtEveryLengthAndAlignment) {
    const auto data = random_bytes(1200 + 16, 1);
    std::mt19937 rng(2);
    for (const Crc32Kernel k : kernels()) {
        SCOPED_TRACE(name(k));
        for (std::size_t offset = 0; offset < 16; ++offset)
            for (std::size_t n = 0; n <= (offset < 2 ? 1200 : 300); ++n) {
                const std::uint32_t start = n % 2 ? std::uint32_t(rng()) : 0;  // any prior CRC, not only 0
                const unsigned char* p = data.data() + offset;
                ASSERT_EQ(crc32_update_with(k, start, p, n), zlib_crc(start, p, n)) << "n " << n << " offset " << offset;
            }
    }
}

TEST(Crc32, MatchesZlibOnLargeRandomBuffers) {
    const auto data = random_bytes((std::size_t(6) << 20) + 64, 3);
    for (const std::size_t n : {std::size_t(4096), std::size_t(65536 + 13), (std::size_t(1) << 20) + 255,
                                std::size_t(6) << 20}) {
        for (const std::size_t offset : {std::size_t(0), std::size_t(7), std::size_t(33)}) {
            const unsigned char* p = data.data() + offset;
            const std::uint32_t want = zlib_crc(0, p, n);
            for (const Crc32Kernel k : kernels())
                EXPECT_EQ(crc32_update_with(k, 0, p, n), want) << name(k) << " n " << n << " offset " << offset;
            EXPECT_EQ(crc32_update_fast(0, p, n), want) << "n " << n << " offset " << offset;
        }
    }
}

TEST(Crc32, ChainedUpdatesEqualOneCall) {
    const auto data = random_bytes(200000, 4);
    const std::uint32_t want = zlib_crc(0, data.data(), data.size());
    std::mt19937 rng(5);
    for (const Crc32Kernel k : kernels()) {
        SCOPED_TRACE(name(k));
        for (int trial = 0; trial < 20; ++trial) {
            // Random cut points, repeats (empty pieces) included; small and large pieces both.
            std::vector<std::size_t> cuts(std::size_t(1 + rng() % 40));
            const std::size_t span = trial % 2 ? data.size() : 2000;
            for (auto& c : cuts) c = rng() % span;
            cuts.push_back(0);
            cuts.push_back(data.size());
            std::sort(cuts.begin(), cuts.end());
            std::uint32_t crc = 0;
            for (std::size_t i = 1; i < cuts.size(); ++i)
                crc = crc32_update_with(k, crc, data.data() + cuts[i - 1], cuts[i] - cuts[i - 1]);
            ASSERT_EQ(crc, want) << "trial " << trial;
        }
    }
    // Mixed kernels along one chain: each takes up any other's CRC.
    const auto ks = kernels();
    std::uint32_t crc = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; at < data.size(); ++i) {
        const std::size_t n = std::min(data.size() - at, std::size_t(rng() % 5000));
        crc = crc32_update_with(ks[i % ks.size()], crc, data.data() + at, n);
        at += n;
    }
    EXPECT_EQ(crc, want);
}
