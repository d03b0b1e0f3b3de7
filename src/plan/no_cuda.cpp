// Device discovery when apron is built without the CUDA toolkit.
#include "apron/devices.hpp"

namespace apron {

std::vector<std::string> cuda_devices() { return {}; }
std::string cuda_status() { return "not built (no CUDA toolkit at configure time)"; }

} // namespace apron
