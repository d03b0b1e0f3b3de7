#pragma once
// What every GPU suite shares: the skip without a device, and one CUDA executor per test process (its
// device context, stream and pools made once, as a caller that filters many images holds one).
#include <memory>

#include <gtest/gtest.h>

#include "plan/plan.hpp"  // cuda_available, make_cuda_executor

#define REQUIRE_GPU() \
    if (!apron::cuda_available()) GTEST_SKIP() << "no CUDA device"

namespace apron::test {

inline Executor& shared_cuda_executor() {
    static const std::unique_ptr<Executor> ex = make_cuda_executor();
    return *ex;
}

} // namespace apron::test
