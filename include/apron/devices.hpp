#pragma once
// GPUs visible to this build: empty without the CUDA backend or without a device.
#include <string>
#include <vector>

namespace apron {

// One line per device: "0: NVIDIA H200, sm_90, 132 SMs, 139.8 GiB".
std::vector<std::string> cuda_devices();
// "not built", "built, no device (reason)" or "built, N device(s)".
std::string cuda_status();

} // namespace apron
