#pragma once
// What `apron batch` reads: a GenConv job file, a list file, a directory, a glob pattern or images, resolved to
// the ordered list of input images (the order fixes each image's index, its output name and the hand-out order).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "batch/job_file.hpp"

namespace apron::batch {

struct InputItem {
    std::string path;
    int pad_x = 0, pad_y = 0;  // from a job file: the output is the interior
};

enum class InputKind { automatic, job, list, directory, glob };
// "auto", "job", "list", "dir" or "glob" (--inputs-as, apron.batch(inputs_as=)); nullopt for anything else.
std::optional<InputKind> parse_input_kind(std::string_view name);

struct InputSet {
    std::vector<InputItem> items;
    std::optional<JobFile> job;  // when the inputs came from a job file (one at most)
};

// Each spec is, by `kind` or (automatic) by what it is:
//   a directory   its regular image files (extensions pgm ppm pnm pbm pam pfm png jpg jpeg jpe tif tiff fits fit fts, any
//                 case; not recursive), sorted by name (byte order); a directory without one is an error;
//   a pattern     with * ? or [ that names no existing path: glob(3), sorted, regular files only; a pattern
//                 matching none is an error;
//   an image      (automatic only) a regular file with one of those extensions, so that `apron batch *.png`
//                 expanded by the shell works;
//   a job file    (looks_like_job_file) its paths and padding, read with job_options; at most one job file
//                 per batch;
//   a list file   one path per line; blank lines and lines starting with '#' ignored; surrounding blanks
//                 and a trailing '\r' are not part of the path.
// A forced kind is honoured whatever the spec looks like (kind=list reads a job-looking file as a list).
// Relative paths in job and list files are relative to the current directory (as GenConv reads them).
// Several specs are concatenated in order. Throws apron::Error naming the spec for: nothing found, an
// unreadable file, a missing listed image ("FILE:LINE: image 'PATH' not found"; checked up front, so a typo
// fails before any work is done), and "no input images" when the specs give none at all.
InputSet resolve_inputs(const std::vector<std::string>& specs, InputKind kind = InputKind::automatic,
                        const JobOptions& job_options = {});

} // namespace apron::batch
