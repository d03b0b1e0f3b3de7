// apron._apron: the compiled half of the `apron` Python package. The public API (operations as functions,
// Pipeline, batch, array handling for NumPy, CuPy and torch) lives in python/apron/*.py over this module.
#include <cstdint>

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
    // The address of a NumPy array's first element through the buffer protocol: a third of the time of
    // __array_interface__ (which builds a dict), and paid twice per call (input and output).
    m.def("data_pointer", [](nb::handle array) {
        Py_buffer view;
        if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_STRIDES) != 0) throw nb::python_error();
        const auto address = reinterpret_cast<std::uintptr_t>(view.buf);
        PyBuffer_Release(&view);
        return address;
    });
    apron::python::bind_errors(m);
    apron::python::bind_registry(m);
    apron::python::bind_pipeline(m);
    apron::python::bind_batch(m);
}
