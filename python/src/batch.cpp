// apron.batch(): many image files through one pipeline (include/apron/batch.hpp), with the inputs resolved
// and the outputs named exactly as `apron batch` does (a job file, list file, directory or glob; the
// --name pattern and --format). The progress bar is the CLI's, drawn on stderr when asked.
#include <cstdint>
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
              BatchReport report;
              {
                  nb::gil_scoped_release unlocked;
                  report = run_batch(items, o);
              }
              nb::dict d = report_dict(report);
              d["total"] = items.size();
              return d;
          });
}

} // namespace apron::python
