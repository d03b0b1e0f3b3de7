#pragma once
// The temporary files being written (write_file_atomically), in a process-wide table that a signal
// handler can empty: fixed size, lock-free, nothing allocated, only async-signal-safe calls (unlink) on the
// handler's side. install_signal_cleanup() (apron/io.hpp) installs the handlers that use it.
namespace apron::io {

// Slots in the table: writes in progress at once beyond this are not removed by a signal (they still
// never leave a partial file under the target's name).
constexpr int temporary_slots = 128;

// Registers the temporary file `path`, just created; returns its slot, or -1 when the table is full or
// the path too long. A relative path is removed relative to the working directory at the time of the
// signal (apron does not change directory while it writes).
int register_temporary(const char* path) noexcept;

// Takes the slot back, after the rename or after removing the file. false when a signal handler removed
// the file meanwhile (the write was interrupted). -1 is accepted and returns true.
bool unregister_temporary(int slot) noexcept;

// Removes every registered file (each at most once). Async-signal-safe: the handlers call it.
void remove_registered_temporaries() noexcept;

}  // namespace apron::io
