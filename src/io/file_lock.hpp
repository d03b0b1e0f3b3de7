#pragma once
// An exclusive lock held by one process for the length of a run: `apron batch` on its output folder
// (OUTPUT_DIR/.apron-batch/lock), `apron filter` on its output (.NAME.apron-lock beside it). Two runs
// writing one output would each finish "successfully" with the other's bytes, and a resume would trust a
// journal or manifest the other wrote.
//
// The lock is an open-file-description lock (fcntl F_OFD_SETLK) that the kernel drops when the process ends
// in any way, kill -9 included, so a lock file left behind never blocks a later run. The file itself only
// says who holds the lock (pid, host, start time), for the message of the run that is refused. It is opened
// without following links (a link planted there is refused, never written through), and a file with other
// hard links is refused too (its holder's details would overwrite another file).
//
// A lock file that is removed when the run ends (remove_when_done) is removed while still locked, and a
// process that locked a file which is no longer the one at the path (removed or replaced meanwhile) lets it
// go and tries again: two processes never hold two different files of one name.
#include <optional>
#include <string>

namespace apron::io {

class FileLock {
public:
    // Takes the lock at once (never waits). When another process holds it: apron::Error
    //   "PATH: BUSY (pid P on HOST, started TIME); ADVICE"
    // and one naming the file when it cannot be created, is not a regular file, or cannot be locked.
    FileLock(const std::string& path, const std::string& busy, const std::string& advice, bool remove_when_done);
    ~FileLock();
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

    const std::string& path() const { return path_; }

private:
    std::string path_;
    int fd_ = -1, slot_ = -1;  // slot_: SIGINT/SIGTERM remove a lock file that goes when done
    bool remove_ = false;
};

// Who holds the lock of PATH now ("pid P on HOST, started TIME"), or nullopt when no process does. Takes
// nothing and creates nothing.
std::optional<std::string> lock_holder(const std::string& path);

}  // namespace apron::io
