#pragma once
// What a batch's outputs depend on, recorded with each output in the manifest: a resumed run skips only the
// outputs made under the same fingerprint. `apron batch` and apron.batch() both take it from here, so a
// resume notices the same changes whichever started the run.
#include <string>

#include "apron/batch.hpp"
#include "batch/inputs.hpp"
#include "batch/naming.hpp"

namespace apron::batch {

// resume_fingerprint (run/resume_fingerprint.hpp, shared with the streaming engine's journal) of the pipeline
// and run options, with a job file's padding, the PNM byte order, the output names and format, the JPEG
// quality, whether metadata is stripped, and --auto-orient; as one line (fingerprint().text()).
std::string fingerprint(const BatchOptions& options, const InputSet& inputs, const OutputNaming& naming);

} // namespace apron::batch
