// The output folder's lock (see output_lock.hpp).
#include "batch/output_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "apron/errors.hpp"
#include "io/temporary_name.hpp"

namespace apron::batch {

namespace {

namespace fs = std::filesystem;

std::string errno_text(int e) { return std::generic_category().message(e); }

// Every output is written in the output folder: one that takes no file fails the run at once, not once per
// image. The probe is named as the atomic writer names its temporaries, so a resumed run removes one that a
// crash left.
void check_writable(const std::string& output_dir) {
    const std::string out = output_dir.empty() ? std::string(".") : output_dir;
    std::string probe = out + "/" + io::temporary_name("write-check", "XXXXXX");
    const int fd = ::mkstemp(probe.data());
    if (fd < 0) fail(out, "cannot write in the output folder: " + errno_text(errno));
    ::close(fd);
    ::unlink(probe.c_str());
}

} // namespace

std::string batch_directory(const std::string& output_dir) {
    return (output_dir.empty() ? std::string(".") : output_dir) + "/.apron-batch";
}

std::string lock_file_path(const std::string& output_dir) { return batch_directory(output_dir) + "/lock"; }

std::optional<std::string> output_directory_problem(const std::string& output_dir) {
    const std::string out = output_dir.empty() ? std::string(".") : output_dir;
    std::error_code ec;
    const fs::file_status st = fs::status(out, ec);
    if (fs::exists(st) && !fs::is_directory(st)) return out + ": the output folder is not a directory";
    const std::string dir = batch_directory(output_dir);
    const fs::file_status bst = fs::status(dir, ec);
    if (fs::exists(bst) && !fs::is_directory(bst))
        return dir + ": is not a directory (apron batch keeps its manifests and lock there; move it away)";
    return std::nullopt;
}

void prepare_output_directory(const std::string& output_dir) {
    if (const auto problem = output_directory_problem(output_dir)) throw Error(*problem);
    const std::string out = output_dir.empty() ? std::string(".") : output_dir;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) fail(out, "cannot create the output directory: " + ec.message());
    const std::string dir = batch_directory(output_dir);
    fs::create_directory(dir, ec);
    if (ec) fail(dir, "cannot create the batch directory: " + ec.message());
}

OutputLock::OutputLock(const std::string& output_dir) : path_(lock_file_path(output_dir)) {
    prepare_output_directory(output_dir);
    lock_ = std::make_unique<io::FileLock>(path_, "another apron batch is writing to this output folder",
                                           "; wait for it to end or choose another output folder", false);
    check_writable(output_dir);  // on failure the lock goes with lock_
}

OutputLock::~OutputLock() = default;

std::optional<std::string> output_lock_holder(const std::string& output_dir) {
    return io::lock_holder(lock_file_path(output_dir));
}

} // namespace apron::batch
