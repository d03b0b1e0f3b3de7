#pragma once
// What every GPU suite shares: the skip without a device, one CUDA executor per test process (its
// device context, stream and pools made once, as a caller that filters many images holds one), and device
// images whose pointer and pitch break alignment as a test chooses.
#include <cstddef>
#include <memory>

#include <gtest/gtest.h>

#if APRON_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "apron/image.hpp"
#include "plan/plan.hpp"  // cuda_available, make_cuda_executor

#define REQUIRE_GPU() \
    if (!apron::cuda_available()) GTEST_SKIP() << "no CUDA device"

namespace apron::test {

inline Executor& shared_cuda_executor() {
    static const std::unique_ptr<Executor> ex = make_cuda_executor();
    return *ex;
}

#if APRON_HAVE_CUDA
// The samples of a device view in a new host image.
inline Image download(ConstImageView v) {
    Image out(v.shape);
    EXPECT_EQ(cudaMemcpy2D(out.view().data, out.pitch(), v.data, v.pitch, v.shape.row_bytes(), std::size_t(v.height()),
                           cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
}

// A device image whose data pointer sits `offset` samples into its allocation and whose pitch is the row's
// bytes plus `pad` samples: pointer and pitch then break 4- and 16-byte alignment as chosen.
struct DeviceImage {
    std::byte* base = nullptr;
    ImageView view;
    DeviceImage(const ImageShape& s, int offset, int pad) {
        const std::size_t bytes = bytes_per_sample(s.type);
        const std::size_t pitch = s.row_bytes() + std::size_t(pad) * bytes;
        void* p = nullptr;
        EXPECT_EQ(cudaMalloc(&p, pitch * std::size_t(s.height) + 64), cudaSuccess);
        base = static_cast<std::byte*>(p);
        view = ImageView{base + std::size_t(offset) * bytes, s, pitch, Memory::device};
    }
    DeviceImage(const DeviceImage&) = delete;
    DeviceImage& operator=(const DeviceImage&) = delete;
    ~DeviceImage() { cudaFree(base); }
    void upload(ConstImageView host) {
        EXPECT_EQ(cudaMemcpy2D(view.data, view.pitch, host.data, host.pitch, host.shape.row_bytes(), std::size_t(host.height()),
                               cudaMemcpyHostToDevice),
                  cudaSuccess);
    }
    Image download() const { return test::download(view); }
};
#endif

} // namespace apron::test
