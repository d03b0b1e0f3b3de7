#pragma once
// The temporary files being written (write_file_atomically), in a process-wide table that a signal
// handler can empty: fixed size, lock-free, nothing allocated, only async-signal-safe calls (unlink,
// nanosleep) on the handler's side. install_signal_cleanup() (apron/io.hpp) installs the handlers that use it.
//
// A name is reserved before the file is created and confirmed once it exists, so there is no moment when
// a temporary file exists unknown to the table: a handler that finds a reservation of another thread waits
// for it to be confirmed or given up (one open() call); one that interrupted the reserving thread itself
// removes the name at once (the file exists or will never be created, as the process ends first).
namespace apron::io {

// Slots in the table: writes in progress at once beyond this are not removed by a signal (they still
// never leave a partial file under the target's name).
constexpr int temporary_slots = 128;

// Reserves a slot for `path`, about to be created by this thread; returns it, or -1 when the table is
// full or the path too long. A relative path is removed relative to the working directory at the time of
// the signal (apron does not change directory while it writes).
int reserve_temporary(const char* path) noexcept;
// The file of a reserved slot now exists (-1 is accepted).
void confirm_temporary(int slot) noexcept;
// Reserves and confirms at once, for a file that already exists.
int register_temporary(const char* path) noexcept;

// Frees the slot, after the rename, after removing the file, or when creating it failed. false when a
// signal handler removed the file meanwhile (the write was interrupted). -1 is accepted and returns true.
bool unregister_temporary(int slot) noexcept;

// Removes every registered file (each at most once). Async-signal-safe: the handlers call it.
void remove_registered_temporaries() noexcept;

// A line the signal handlers write to stderr before the process ends, for what a signal leaves behind on
// purpose ("apron: o.pgm: interrupted; partial output kept for --resume ..."); nullptr clears it. One at a
// time (the last set); cut to 1023 bytes.
void set_signal_note(const char* line) noexcept;

}  // namespace apron::io
