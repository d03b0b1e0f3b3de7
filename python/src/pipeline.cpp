// apron::Pipeline for Python. Arrays arrive as raw views (pointer, shape, row pitch, host or device memory):
// python/apron/_arrays.py reads them from NumPy's __array_interface__ and CuPy's and torch's own attributes
// (pointer, shape, strides, device) and checks their layout, so this file only builds ImageViews and runs.
// The GIL is released while apron works; between steps a run checks for Ctrl-C (KeyboardInterrupt).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "bindings.hpp"

namespace apron::python {

namespace {

using MaskArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using MaskArrays = std::map<std::string, MaskArray>;

// A NumPy mask (float64) as apron's planes: (rows, columns) is one plane, (planes, rows, columns) a volume's
// mask, plane 0 first (SciPy's (Z, Y, X)); `what` names it ("--op SPEC: mask") in errors. The sizes are
// checked before any weight is copied.
GivenMask mask_of(const MaskArray& a, const std::string& what) {
    if (a.ndim() != 2 && a.ndim() != 3)
        fail(what, "a " + std::to_string(a.ndim()) + "-D array; weights are 2-D (rows x columns) or 3-D (planes x rows x columns)");
    const std::size_t d = a.ndim() == 3 ? a.shape(0) : 1, h = a.shape(a.ndim() - 2), w = a.shape(a.ndim() - 1);
    const std::size_t side = max_mask_side;
    if (w < 1 || h < 1 || d < 1 || w > side || h > side || d > side)
        fail(what, "the array is " + (a.ndim() == 3 ? std::to_string(d) + "x" : std::string()) + std::to_string(h) + "x" +
                       std::to_string(w) + (a.ndim() == 3 ? " (planes x rows x columns)" : " (rows x columns)") +
                       "; each side must be 1.." + std::to_string(max_mask_side));
    if (double(w) * double(h) * double(d) > double(side) * double(side))
        fail(what, "the array has " + std::to_string(w * h * d) + " weights, more than " + std::to_string(side * side));
    std::vector<Mask> planes;
    for (std::size_t z = 0; z < d; ++z) {
        const double* first = a.data() + z * h * w;
        std::vector<double> weights(first, first + w * h);
        for (std::size_t k = 0; k < weights.size(); ++k)
            if (!std::isfinite(weights[k]))
                fail(what, "weight at " + (a.ndim() == 3 ? "plane " + std::to_string(z) + ", " : std::string()) + "row " +
                               std::to_string(k / w) + ", column " + std::to_string(k % w) + " is not finite");
        planes.emplace_back(int(w), int(h), std::move(weights));
    }
    return GivenMask(std::move(planes));
}

Backend backend_of(const std::string& name) {
    const auto b = parse_backend(name);
    if (!b) fail("backend", "unknown backend '" + name + "' (use auto, cpu, reference or cuda)");
    return *b;
}

Algorithm algorithm_of(const std::string& name) {
    const auto a = parse_algorithm(name);
    if (!a) fail("algorithm", "unknown algorithm '" + name + "' (use auto, direct, separable, low-rank, fft or tensor)");
    return *a;
}

PixelType type_of(int code) {
    if (code < 0 || code > 2) fail("type", "unknown pixel type code " + std::to_string(code));
    return PixelType(code);
}

} // namespace

RunOptions run_options(int out_type, const std::string& backend, const std::string& algorithm, int threads,
                       std::uint64_t memory_budget, std::uintptr_t stream) {
    RunOptions o;
    o.backend = backend_of(backend);
    o.algorithm = algorithm_of(algorithm);
    o.threads = threads;
    if (out_type >= 0) o.out_type = type_of(out_type);
    o.memory_budget = memory_budget;
    o.cuda_stream = reinterpret_cast<void*>(stream);
    return o;
}

namespace {

ImageShape shape_of(int height, int width, int channels, int type) {
    ImageShape s{width, height, channels, type_of(type)};
    validate_shape(s, "input image");
    return s;
}

// Ctrl-C during a long run: the run checks for a signal between its steps (RunOptions::between_steps),
// taking the GIL for the check only; a pending KeyboardInterrupt (or whatever a Python signal handler
// raised) stops the run, and is raised once the GIL is back.
struct Interrupted {};

void check_python_signals(std::size_t, std::size_t) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw Interrupted{};
}

template <class F>
void run_interruptible(F&& run) {
    bool interrupted = false;
    {
        nb::gil_scoped_release released;
        try {
            run();
        } catch (const Interrupted&) {
            interrupted = true;
        }
    }
    if (interrupted) throw nb::python_error();  // the error PyErr_CheckSignals set
}

// One run from an array's pointer into another's: an image (depth 1) or a volume of `depth` planes, on the
// arrays' device (current for the run only), interruptible by Ctrl-C between steps.
void run_arrays(const Pipeline& p, std::uintptr_t in_ptr, bool in_device, int depth, int height, int width, int channels,
                int in_type, std::size_t in_pitch, std::uintptr_t out_ptr, bool out_device, int out_type, std::size_t out_pitch,
                RunOptions o, int device) {
    ImageShape in_shape = shape_of(height, width, channels, in_type);
    in_shape.depth = depth;
    validate_shape(in_shape, "input image");
    ImageShape out_shape = in_shape;
    out_shape.type = type_of(out_type);
    const ConstImageView in{reinterpret_cast<const std::byte*>(in_ptr), in_shape, in_pitch, in_device ? Memory::device : Memory::host};
    const ImageView out{reinterpret_cast<std::byte*>(out_ptr), out_shape, out_pitch, out_device ? Memory::device : Memory::host};
    o.cuda_device = device;
    o.between_steps = check_python_signals;
    run_interruptible([&] { p.run(in, out, o); });
}

} // namespace

void bind_pipeline(nb::module_& m) {
    nb::class_<Pipeline>(m, "Pipeline")
        // One (spec, masks) pair per operation: the spec's mask/element parameters named in `masks` take
        // those arrays' weights (the spec holds a placeholder value for them, for messages).
        .def("__init__",
             [](Pipeline* self, const std::vector<std::pair<std::string, MaskArrays>>& ops) {
                 new (self) Pipeline();
                 for (const auto& [spec, arrays] : ops) {
                     GivenMasks given;
                     for (const auto& [name, array] : arrays) given.emplace(name, mask_of(array, "--op " + spec + ": " + name));
                     self->add(parse_operation(spec, given));
                 }
             })
        .def("specs", [](const Pipeline& p) {
            std::vector<std::string> specs;
            for (const auto& op : p.operations()) specs.push_back(op.spec);
            return specs;
        })
        .def("run",
             [](const Pipeline& p, std::uintptr_t in_ptr, bool in_device, int height, int width, int channels, int in_type,
                std::size_t in_pitch, std::uintptr_t out_ptr, bool out_device, int out_type, std::size_t out_pitch,
                const std::string& backend, const std::string& algorithm, int threads, std::uint64_t memory_budget,
                std::uintptr_t stream, int device) {
                 run_arrays(p, in_ptr, in_device, 1, height, width, channels, in_type, in_pitch, out_ptr, out_device, out_type,
                            out_pitch, run_options(out_type, backend, algorithm, threads, memory_budget, stream), device);
             })
        // A volume of `depth` planes of height x width (apron/image.hpp: plane z's row y is row z * height + y
        // of one pitch): a (Z, Y, X[, C]) array, or a contiguous stack of images run as planes in one call.
        .def("run_volume",
             [](const Pipeline& p, std::uintptr_t in_ptr, bool in_device, int depth, int height, int width, int channels,
                int in_type, std::size_t in_pitch, std::uintptr_t out_ptr, bool out_device, int out_type, std::size_t out_pitch,
                const std::string& backend, const std::string& algorithm, int threads, std::uint64_t memory_budget,
                std::uintptr_t stream, int device) {
                 run_arrays(p, in_ptr, in_device, depth, height, width, channels, in_type, in_pitch, out_ptr, out_device, out_type,
                            out_pitch, run_options(out_type, backend, algorithm, threads, memory_budget, stream), device);
             })
        // Whether a step reads along z (sigma_z, depth, dz, 3-D elements): a stack of images then runs image by
        // image, never as one volume whose z step would mix them.
        .def("along_z",
             [](const Pipeline& p) {
                 for (const auto& op : p.operations())
                     for (const auto& step : op.steps)
                         if (step.axes != Axes::plane) return true;
                 return false;
             })
        // The same run `iterations` times in C++ (no Python in the loop): host seconds per call, the best of
        // `repeats` rounds. bench/python_overhead.py subtracts it from a Python call's time. With device views
        // and a stream, run() only queues the work, so this times what the host spends per call.
        .def("time_run",
             [](const Pipeline& p, std::uintptr_t in_ptr, bool device, int height, int width, int channels, int type,
                std::size_t in_pitch, std::uintptr_t out_ptr, std::size_t out_pitch, const std::string& backend, int threads,
                std::uintptr_t stream, int iterations, int repeats, int cuda_device) {
                 const ImageShape shape = shape_of(height, width, channels, type);
                 const Memory memory = device ? Memory::device : Memory::host;
                 const ConstImageView in{reinterpret_cast<const std::byte*>(in_ptr), shape, in_pitch, memory};
                 const ImageView out{reinterpret_cast<std::byte*>(out_ptr), shape, out_pitch, memory};
                 RunOptions o = run_options(-1, backend, "auto", threads, 0, stream);
                 o.cuda_device = cuda_device;  // the arrays' device, as run() takes it
                 double best = 1e300;
                 for (int r = 0; r < repeats; ++r) {
                     const auto t0 = std::chrono::steady_clock::now();
                     for (int k = 0; k < iterations; ++k) p.run(in, out, o);
                     best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iterations);
                 }
                 return best;
             },
             nb::call_guard<nb::gil_scoped_release>())
        .def("output_shape",
             [](const Pipeline& p, int height, int width, int channels, int type, int out_type) {
                 const ImageShape s = p.output_shape(shape_of(height, width, channels, type),
                                                     run_options(out_type, "auto", "auto", 0, 0, 0));
                 return std::make_tuple(s.height, s.width, s.channels, int(s.type));
             })
        // Planned on `device` (the array's; -1 for host arrays and shapes: the current one), whose tables
        // choose the kernels, as run() plans them. The Python side always passes it.
        .def("describe",
             [](const Pipeline& p, int height, int width, int channels, int type, int out_type, const std::string& backend,
                const std::string& algorithm, bool candidates, int device) {
                 RunOptions o = run_options(out_type, backend, algorithm, 0, 0, 0);
                 o.cuda_device = device;
                 return p.describe(shape_of(height, width, channels, type), o, candidates);
             },
             nb::call_guard<nb::gil_scoped_release>())
        .def("memory_needed",
             [](const Pipeline& p, int height, int width, int channels, int type, int out_type, const std::string& backend,
                int device) {
                 RunOptions o = run_options(out_type, backend, "auto", 0, 0, 0);
                 o.cuda_device = device;
                 return p.memory_needed(shape_of(height, width, channels, type), o);
             });
}

} // namespace apron::python
