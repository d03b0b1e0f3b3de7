#pragma once
// Output paths of a batch: OUTPUT_DIR / pattern, the pattern's fields filled from each input.
//   {name}   the input's file name        (a/b/img.01.png -> img.01.png)
//   {stem}   the name without its extension          (img.01)
//   {ext}    the output format's extension, without the dot (png)
//   {index}  the input's position in the list, from 0; {index:N} zero-padded to N digits (N = 1..18)
// The pattern names a file inside OUTPUT_DIR: not empty, no '/'; braces only open and close fields.
// The default pattern is "{stem}.{ext}". The output format is, first that applies:
//   1. `format` (--format);
//   2. the pattern's literal extension ("{stem}_blur.png");
//   3. the input's own format when apron writes it: .pgm .ppm .pnm .pfm .png .jpg .tif .fits .fit .fts keep
//      their extension; .jpeg and .jpe become .jpg, .tiff becomes .tif (PNG when TIFF or FITS is not built
//      in), and .pbm becomes .pgm (bitmaps are read as 8-bit gray);
//   4. PNG (e.g. for .pam, whose 2- or 4-channel images PNM cannot write).
// {ext} keeps the input's spelling when the input is of the output format (a .ppm stays .ppm under
// --format pnm), else it is extension_of(format) (so a color input under --format pnm gives .pgm holding P6).
// Whether the format can hold the result's type and channels depends on the pipeline, not on the names:
// the engine checks can_store before writing (f32 results need --format pfm or tif).
#include <optional>
#include <string>
#include <vector>

#include "apron/batch.hpp"
#include "apron/image.hpp"
#include "apron/io.hpp"
#include "batch/inputs.hpp"

namespace apron::batch {

struct OutputNaming {
    std::string directory;
    std::string pattern = "{stem}.{ext}";
    std::optional<ImageFormat> format;  // --format
};

// Throws apron::Error naming the pattern for a malformed pattern (unknown field, unbalanced brace, '/') or an
// output name the writers do not take as the output format (no or unknown extension, or another format's,
// e.g. "{name}" of a .png input under --format jpeg); naming both inputs when two of them map to the same
// output (or the input when it is listed twice); naming the input when an output is an input itself.
std::vector<std::string> output_paths(const std::vector<InputItem>& inputs, const OutputNaming& naming);

// The engine's items for resolved inputs, each with its output path (output_paths) and padding; a job file's
// checks (largest size, bits per sample) go onto `options`. What `apron batch` and apron.batch() both run.
std::vector<BatchItem> batch_items(const InputSet& inputs, const OutputNaming& naming, BatchOptions& options);

// The extension written for a format ("png", "pgm", "pfm", "jpg", "tif"); parse_format reads those and
// their aliases (jpeg, tiff, ppm, pnm), nullopt otherwise.
const char* extension_of(ImageFormat format);
std::optional<ImageFormat> parse_format(const std::string& name);

} // namespace apron::batch
