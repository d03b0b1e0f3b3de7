#pragma once
// What a batch's outputs depend on, recorded with each output in the manifest: a resumed run skips only the
// outputs made under the same fingerprint. `apron batch` and apron.batch() both take it from here, so a
// resume notices the same changes whichever started the run.
#include <string>

#include "apron/batch.hpp"
#include "batch/inputs.hpp"
#include "batch/naming.hpp"

namespace apron::batch {

// The version, the operations' text and the CRC-32 of every mask and structuring element they hold (from a
// file or given as weights: editing a mask file between two runs changes the outputs), the output type,
// backend and algorithm (float results differ in their last bits between them), a job file's padding, the
// PNM byte order, the output names and format, the JPEG quality, whether metadata is stripped, and --auto-orient.
std::string fingerprint(const BatchOptions& options, const InputSet& inputs, const OutputNaming& naming);

} // namespace apron::batch
