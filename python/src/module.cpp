// apron._apron: the compiled half of the `apron` Python package. The public API (operations as functions,
// Pipeline, batch, array handling for NumPy, CuPy and torch) lives in python/apron/*.py over this module.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "apron/devices.hpp"
#include "apron/memory.hpp"
#include "apron/pipeline.hpp"
#include "bindings.hpp"

namespace nb = nanobind;

NB_MODULE(_apron, m) {
    m.doc() = "apron's C++ library (bindings; use the `apron` package)";
    m.attr("__version__") = APRON_VERSION;
#ifdef APRON_HAVE_CUDA
    m.attr("has_cuda") = true;
#else
    m.attr("has_cuda") = false;
#endif
    m.def("available_backends", &apron::available_backends, "backends usable in this build and on this machine");
    m.def("cuda_devices", &apron::cuda_devices, "one line per visible CUDA device");
    m.def("cuda_status", &apron::cuda_status, "'not built', 'built, no device (...)' or 'built, N device(s)'");
    m.def("parse_memory_size", [](const std::string& text) { return apron::parse_memory_size(text, "memory_budget"); },
          "bytes from '4G', '512M', '75%' (of physical memory) or a plain number");
    apron::python::bind_errors(m);
    apron::python::bind_registry(m);
    apron::python::bind_pipeline(m);
    apron::python::bind_batch(m);
}
