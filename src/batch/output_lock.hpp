#pragma once
// One batch at a time per output folder. Two runs writing one folder would write the same outputs and the
// same manifest files at their own offsets, so a resume could keep one run's output as the other's. A run
// therefore holds OUTPUT_DIR/.apron-batch/lock for its whole length: an open-file-description lock
// (fcntl F_OFD_SETLK) that the kernel drops when the process ends in any way, kill -9 included, so a lock
// file left behind never blocks a later run. The file itself only says who holds the lock (pid, host, start
// time), for the message of the run that is refused. The file is never removed: removing it while another
// process is opening it would let two processes lock two different files.
#include <memory>
#include <optional>
#include <string>

#include "io/file_lock.hpp"

namespace apron::batch {

// OUTPUT_DIR/.apron-batch, where the manifests and the lock live.
std::string batch_directory(const std::string& output_dir);
std::string lock_file_path(const std::string& output_dir);

// Creates OUTPUT_DIR and OUTPUT_DIR/.apron-batch where missing. apron::Error naming the one that is in the
// way (a file where a directory must be) or cannot be created (no permission, read-only file system).
void prepare_output_directory(const std::string& output_dir);

// What prepare_output_directory would refuse without trying to create anything: the output folder or the
// batch directory exists and is not a directory (the message it would throw), else nullopt (--dry-run).
std::optional<std::string> output_directory_problem(const std::string& output_dir);

class OutputLock {
public:
    // prepare_output_directory, then takes the lock at once (never waits), then checks that the output folder
    // takes a file ("DIR: cannot write in the output folder: why"). apron::Error
    //   "DIR/.apron-batch/lock: another apron batch is writing to this output folder (pid P on HOST, started
    //    TIME); wait for it to end or choose another output folder"
    // when another process holds it, or naming the lock file when it cannot be created or locked.
    explicit OutputLock(const std::string& output_dir);
    ~OutputLock();
    OutputLock(const OutputLock&) = delete;
    OutputLock& operator=(const OutputLock&) = delete;

    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::unique_ptr<io::FileLock> lock_;  // io::FileLock, never removed (see above)
};

// Who holds the lock of OUTPUT_DIR now ("pid P on HOST, started TIME"), or nullopt when no process does.
// Takes nothing and creates nothing (--dry-run asks it).
std::optional<std::string> output_lock_holder(const std::string& output_dir);

} // namespace apron::batch
