// apron.batch(): many image files through one pipeline (include/apron/batch.hpp), with the inputs resolved
// and the outputs named exactly as `apron batch` does (a job file, list file, directory or glob; the
// --name pattern and --format). The progress bar is the CLI's, drawn on stderr when asked. Ctrl-C stops the
// feed of images and raises KeyboardInterrupt once the images in flight are written.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "apron/batch.hpp"
#include "apron/errors.hpp"
#include "batch/fingerprint.hpp"
#include "batch/inputs.hpp"
#include "batch/naming.hpp"
#include "bindings.hpp"

namespace apron::python {

namespace {

batch::InputKind input_kind(const std::string& name) {
    if (const auto kind = batch::parse_input_kind(name)) return *kind;
    fail("inputs_as", "'" + name + "' is not auto, job, list, dir or glob");
}

nb::dict report_dict(const BatchReport& r) {
    nb::dict d;
    d["done"] = r.done;
    d["skipped"] = r.skipped;
    d["failed"] = r.failed;
    nb::list failures;
    for (const auto& f : r.failures) failures.append(nb::make_tuple(f.input, f.message));
    d["failures"] = failures;
    d["pixels"] = r.pixels;
    d["seconds"] = r.seconds;
    d["summary"] = r.summary;
    d["workers"] = r.workers;
    return d;
}

} // namespace

void bind_batch(nb::module_& m) {
    m.def("batch",
          [](const Pipeline& pipeline, const std::vector<std::string>& inputs, const std::string& inputs_as,
             const std::string& output_dir, const std::string& name, const std::string& format, int out_type,
             const std::string& backend, const std::string& algorithm, int threads,
             int io_threads, std::uint64_t memory_budget, bool resume, bool progress, bool keep_metadata,
             bool auto_orient) {
              BatchOptions o;
              o.keep_metadata = keep_metadata;
              o.auto_orient = auto_orient;
              o.pipeline = pipeline;
              o.run = run_options(out_type, backend, algorithm, threads, memory_budget, 0);
              o.io_threads = io_threads;
              o.memory_budget = memory_budget;
              o.read.memory_budget = memory_budget;
              o.run.memory_budget = memory_budget;
              const batch::InputSet set = batch::resolve_inputs(inputs, input_kind(inputs_as));
              batch::OutputNaming naming;
              naming.directory = output_dir;
              naming.pattern = name;
              if (!format.empty()) {
                  naming.format = batch::parse_format(format);
                  if (!naming.format) fail("format", "'" + format + "' is not png, pgm, ppm, pfm, jpg or tif");
              }
              const std::vector<BatchItem> items = batch::batch_items(set, naming, o);
              o.output_dir = output_dir;
              o.fingerprint = batch::fingerprint(o, set, naming);  // what the outputs depend on, for resume
              o.resume = resume;
              o.progress = progress;
              // Ctrl-C: the batch runs on a thread of its own while this (the main) thread checks for signals
              // every 50 ms; a pending one stops the feed, the images in flight finish, and it is raised.
              std::atomic<bool> stop{false};
              std::atomic<std::size_t> counter{0};
              o.next = [&]() -> std::optional<std::size_t> {
                  if (stop) return std::nullopt;
                  const std::size_t i = counter++;
                  return i < items.size() ? std::optional(i) : std::nullopt;
              };
              BatchReport report;
              bool interrupted = false;
              {
                  nb::gil_scoped_release unlocked;
                  auto run = std::async(std::launch::async, [&] { return run_batch(items, o); });
                  while (run.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
                      nb::gil_scoped_acquire gil;
                      if (PyErr_CheckSignals() != 0) {
                          interrupted = stop = true;
                          break;
                      }
                  }
                  if (interrupted) {
                      run.wait();  // the images in flight; their errors give way to the interruption
                  } else {
                      report = run.get();
                  }
              }
              if (interrupted) throw nb::python_error();
              nb::dict d = report_dict(report);
              d["total"] = items.size();
              return d;
          });
}

} // namespace apron::python
