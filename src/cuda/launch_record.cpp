// This thread's launch record (launch_record.hpp).
#include "cuda/launch_record.hpp"

#include <utility>

namespace apron::cuda {
namespace {

constexpr std::size_t kept = 64;  // a long pipeline's launches do not grow it without bound
thread_local std::vector<KernelChoice> record;

} // namespace

void record_launch(KernelChoice kernel) {
    if (record.size() == kept) record.erase(record.begin());
    record.push_back(std::move(kernel));
}

const std::vector<KernelChoice>& launches() { return record; }

void clear_launches() { record.clear(); }

} // namespace apron::cuda
