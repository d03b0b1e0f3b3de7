#pragma once
// The parts of the apron._apron module, each binding one area of the C++ API (python/apron/ wraps them
// into the public, NumPy-style functions).
#include <cstdint>
#include <string>

#include <nanobind/nanobind.h>

#include "apron/pipeline.hpp"

namespace apron::python {

namespace nb = nanobind;

// RunOptions from the Python keywords (out_type: a PixelType code or -1 for the input's type); apron::Error
// naming "backend" or "algorithm" for an unknown name.
RunOptions run_options(int out_type, const std::string& backend, const std::string& algorithm, int threads,
                       std::uint64_t memory_budget, std::uintptr_t stream);

void bind_errors(nb::module_& m);    // apron::Error -> ValueError / OSError / MemoryError
void bind_registry(nb::module_& m);  // operations(): the op registry as data
void bind_pipeline(nb::module_& m);  // Pipeline: build from specs (+ NumPy masks), run on raw views, describe
void bind_batch(nb::module_& m);     // batch(): include/apron/batch.hpp with the CLI's input and output naming

} // namespace apron::python
