#pragma once
// GenConv job files, read for compatibility:
//
//   # any line whose first non-blank character is '#' is a comment, wherever it is
//   3                      number of images
//   8                      bits per sample (8, 16 or 32; see JobOptions for 32)
//   4096 4096              largest width and height of any image of the job
//   2 2                    padding: pixels on each side of x and y that are input only (halo), not output
//   images/a.pgm           one path per line, `count` of them
//   images/b.pgm
//   images/c.pgm
//
// The padding is honoured: the output of a W x H input is its interior (W - 2 pad_x) x (H - 2 pad_y), filtered
// with the padding as context, so tiles cut with a halo of at least the mask's reach give the same pixels as
// the uncut image. The maximum size is checked, not used to size buffers (apron sizes them from each image).
#include <string>
#include <string_view>
#include <vector>

namespace apron::batch {

// GenConv's `bits 32` means int32 samples, which no image format apron reads carries; apron's 32-bit images
// are float (PFM, TIFF). So a job file saying 32 is refused unless the caller says its 32 means float.
enum class JobBits32 { int32, float32 };

struct JobOptions {
    JobBits32 bits32 = JobBits32::int32;  // --job-bits32: int (GenConv's meaning, refused) or float (f32 images)
};

struct JobFile {
    int count = 0;
    int bits = 8;
    int bits_line = 0;               // the line of the bits per sample, for messages about it
    int max_width = 0, max_height = 0;
    int pad_x = 0, pad_y = 0;
    std::vector<std::string> paths;  // as written; relative paths are relative to the current directory
    std::vector<int> path_lines;     // the line of each path, for messages about it
};

// Throws apron::Error "NAME:LINE: what is wrong" for anything malformed:
//   - the four header lines must hold 1, 1, 2 and 2 integers (blank lines and '#' comment lines before and
//     between them are skipped, surrounding blanks and a trailing '\r' ignored);
//   - count 0..100000000, bits 8, 16 or 32 (32 only with options.bits32 float: GenConv's 32 is int32),
//     sides 1..1048576, padding >= 0 with 2 pad below the side;
//   - exactly `count` paths follow: fewer (the count's line is named), more, or a blank line between two
//     paths are errors; blank lines after the last path and '#' comment lines anywhere are fine. A path is
//     its line without surrounding blanks (so names that begin or end with a blank, or begin with '#', cannot
//     be listed as they are: write ./#name) and must not hold a NUL byte.
JobFile parse_job_file(std::string_view text, const std::string& name, const JobOptions& options = {});
JobFile read_job_file(const std::string& path, const JobOptions& options = {});
// Whether the text starts like a job file (after blank and comment lines, a line with one integer, the
// count, then another, the bits), so an input specification can be told apart from a plain list of paths; a
// malformed rest of the header is then reported by parse_job_file with its line.
bool looks_like_job_file(std::string_view text);

} // namespace apron::batch
