// Input specifications -> the ordered list of images of a batch. Everything that can be checked without
// decoding an image is checked here, up front: a typo in a list must fail before hours of work, not after.
#include "batch/inputs.hpp"

#include <glob.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "apron/errors.hpp"
#include "batch/text.hpp"
#include "io/file_io.hpp"

namespace apron::batch {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t max_input_file_bytes = std::size_t(4) << 30;  // job and list files

// The extensions apron reads (io.hpp); other files of a directory are skipped.
constexpr std::array<std::string_view, 15> image_extensions = {"pgm", "ppm", "pnm", "pbm", "pam", "pfm", "png", "jpg",
                                                               "jpeg", "jpe", "tif", "tiff", "fits", "fit", "fts"};

bool is_image_name(const fs::path& name) {
    std::string ext = name.extension().string();
    if (ext.size() < 2) return false;
    ext.erase(0, 1);  // the dot
    for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    return std::find(image_extensions.begin(), image_extensions.end(), ext) != image_extensions.end();
}

bool has_wildcard(const std::string& spec) { return spec.find_first_of("*?[") != std::string::npos; }

// A listed image must exist and not be a directory; `where` is "FILE:LINE".
void check_listed_image(const std::string& path, const std::string& where) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    const std::string shown = text::quoted(path, 4096);
    if (st.type() == fs::file_type::not_found) throw Error(where + ": image " + shown + " not found");
    if (st.type() == fs::file_type::none) throw Error(where + ": image " + shown + ": " + ec.message());
    if (fs::is_directory(st)) throw Error(where + ": " + shown + " is a directory, not an image");
}

void add_directory(InputSet& set, const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    fs::directory_iterator it(dir, ec), end;
    if (ec) fail(dir, "cannot list directory: " + ec.message());
    for (; it != end; it.increment(ec)) {
        if (ec) fail(dir, "cannot list directory: " + ec.message());
        std::error_code type_ec;
        if (it->is_regular_file(type_ec) && is_image_name(it->path().filename()))  // follows symbolic links
            names.push_back(it->path().filename().string());
    }
    if (ec) fail(dir, "cannot list directory: " + ec.message());
    if (names.empty())
        fail(dir, "directory holds no image files (.pgm .ppm .pnm .pbm .pam .pfm .png .jpg .jpeg .jpe .tif .tiff .fits .fit .fts)");
    std::sort(names.begin(), names.end());  // byte order: the same on every machine and locale
    for (const auto& name : names) set.items.push_back({(fs::path(dir) / name).string(), 0, 0});
}

void add_glob(InputSet& set, const std::string& pattern) {
    glob_t found{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &found);  // sorted (no GLOB_NOSORT)
    struct Release {
        glob_t* g;
        ~Release() { ::globfree(g); }
    } release{&found};
    if (rc == GLOB_NOMATCH) fail(pattern, "pattern matches no files");
    if (rc != 0)
        fail(pattern, rc == GLOB_NOSPACE ? "out of memory while matching" : "cannot read a directory while matching");
    std::size_t added = 0;
    for (std::size_t i = 0; i < found.gl_pathc; ++i) {
        std::error_code ec;
        if (!fs::is_regular_file(found.gl_pathv[i], ec)) continue;  // directories and the like
        set.items.push_back({found.gl_pathv[i], 0, 0});
        ++added;
    }
    if (added == 0) fail(pattern, "pattern matches no regular files");
}

void add_job(InputSet& set, JobFile job, const std::string& path) {
    if (set.job)
        fail(path, "a second job file; give one job file per batch (each states its own limits and padding)");
    if (job.paths.empty()) fail(path, "job file lists no images");
    for (std::size_t i = 0; i < job.paths.size(); ++i) {
        check_listed_image(job.paths[i], path + ":" + std::to_string(job.path_lines[i]));
        set.items.push_back({job.paths[i], job.pad_x, job.pad_y});
    }
    set.job = std::move(job);
}

// A list file: one path per line, blank lines and '#' comments skipped.
void add_list_text(InputSet& set, std::string_view content, const std::string& path) {
    const auto lines = text::split_lines(content);
    std::size_t added = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = text::trim(lines[i]);
        if (line.empty() || line.front() == '#') continue;
        const std::string where = path + ":" + std::to_string(i + 1);
        if (line.find('\0') != std::string_view::npos) throw Error(where + ": image path holds a NUL byte");
        check_listed_image(std::string(line), where);
        set.items.push_back({std::string(line), 0, 0});
        ++added;
    }
    if (added == 0) fail(path, "list file names no images");
}

void add_spec(InputSet& set, const std::string& spec, InputKind kind, const JobOptions& job_options) {
    if (spec.empty()) throw Error("an empty input specification (give a job file, list file, directory or pattern)");
    std::error_code ec;
    const fs::file_status st = fs::status(spec, ec);
    if (kind == InputKind::automatic) {
        // An existing path wins over a pattern reading of it: a file may be named "scan[1].png".
        if (fs::is_directory(st)) {
            kind = InputKind::directory;
        } else if (fs::is_regular_file(st) && is_image_name(fs::path(spec).filename())) {
            set.items.push_back({spec, 0, 0});  // an image itself, e.g. from the shell's expansion of *.png
            return;
        } else if (!fs::exists(st)) {
            if (!has_wildcard(spec))
                fail(spec, st.type() == fs::file_type::none ? ec.message() : "no such file, directory or pattern");
            kind = InputKind::glob;
        }
        // else still automatic: a job or list file, told apart by its content below
    }
    if (kind == InputKind::directory) {
        if (!fs::is_directory(st)) fail(spec, "not a directory");
        add_directory(set, spec);
        return;
    }
    if (kind == InputKind::glob) {
        add_glob(set, spec);
        return;
    }

    const char* what = kind == InputKind::job ? "job file" : kind == InputKind::list ? "list file" : "input file";
    const std::string content = io::read_file(spec, what, max_input_file_bytes);
    // Content decides only for automatic: a forced list stays a list even when it starts like a job file.
    if (kind == InputKind::job || (kind == InputKind::automatic && looks_like_job_file(content)))
        add_job(set, parse_job_file(content, spec, job_options), spec);
    else
        add_list_text(set, content, spec);
}

} // namespace

std::optional<InputKind> parse_input_kind(std::string_view name) {
    if (name == "auto") return InputKind::automatic;
    if (name == "job") return InputKind::job;
    if (name == "list") return InputKind::list;
    if (name == "dir") return InputKind::directory;
    if (name == "glob") return InputKind::glob;
    return std::nullopt;
}

InputSet resolve_inputs(const std::vector<std::string>& specs, InputKind kind, const JobOptions& job_options) {
    InputSet set;
    for (const auto& spec : specs) add_spec(set, spec, kind, job_options);
    if (set.items.empty()) throw Error("no input images (give a job file, list file, directory or pattern)");
    return set;
}

} // namespace apron::batch
