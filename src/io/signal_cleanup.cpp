// The registry of temporary files (temporary_registry.hpp) and the signal handlers that empty it
// (install_signal_cleanup, apron/io.hpp).
//
// Each slot moves free -> filling -> reserved (path written, file being created) -> registered (file
// exists) by its writer, and back to free when the writer is done. A handler claims a registered slot
// (registered -> removing), unlinks the path and marks it removed; the writer then finds it removed
// instead of registered and reports the write as interrupted. The path lives in the slot itself, so a
// handler never reads memory a writer may free.
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include "apron/io.hpp"
#include "io/temporary_registry.hpp"

namespace apron::io {
namespace {

enum SlotState : int { free_slot, filling, reserved, registered, removing, removed };

struct Slot {
    std::atomic<int> state{free_slot};
    std::atomic<long> owner{0};  // the thread that reserved it
    char path[PATH_MAX];
};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<long>::is_always_lock_free,
              "the handler needs lock-free atomics");

Slot slots[temporary_slots];

long this_thread() noexcept { return ::syscall(SYS_gettid); }  // async-signal-safe, unlike pthread_self()

}  // namespace

int reserve_temporary(const char* path) noexcept {
    const std::size_t length = std::strlen(path);
    if (length >= PATH_MAX) return -1;
    for (int i = 0; i < temporary_slots; ++i) {
        int expected = free_slot;
        if (!slots[i].state.compare_exchange_strong(expected, filling, std::memory_order_acquire)) continue;
        std::memcpy(slots[i].path, path, length + 1);
        slots[i].owner.store(this_thread(), std::memory_order_relaxed);
        slots[i].state.store(reserved, std::memory_order_release);
        return i;
    }
    return -1;
}

void confirm_temporary(int slot) noexcept {
    if (slot < 0 || slot >= temporary_slots) return;
    int expected = reserved;  // unless a handler already took it
    slots[slot].state.compare_exchange_strong(expected, registered, std::memory_order_acq_rel);
}

int register_temporary(const char* path) noexcept {
    const int slot = reserve_temporary(path);
    confirm_temporary(slot);
    return slot;
}

bool unregister_temporary(int slot) noexcept {
    if (slot < 0 || slot >= temporary_slots) return true;
    Slot& s = slots[slot];
    for (const int mine : {registered, reserved}) {
        int expected = mine;
        if (s.state.compare_exchange_strong(expected, free_slot, std::memory_order_acq_rel)) return true;
    }
    // A handler took it: wait until it is done with the path (a few instructions and one unlink).
    while (s.state.load(std::memory_order_acquire) == removing) {
    }
    s.state.store(free_slot, std::memory_order_release);
    return false;
}

void remove_registered_temporaries() noexcept {
    const int saved_errno = errno;
    const long me = this_thread();
    for (Slot& s : slots) {
        // A reservation of another thread becomes a file or is given up within one open() call: wait for
        // it (up to a second). One of this thread's own was interrupted here: take it as it is.
        int state = s.state.load(std::memory_order_acquire);
        for (int waited = 0; state == reserved && s.owner.load(std::memory_order_relaxed) != me && waited < 100000;
             ++waited) {
            const timespec pause{0, 10000};
            ::nanosleep(&pause, nullptr);
            state = s.state.load(std::memory_order_acquire);
        }
        if (state != registered && state != reserved) continue;
        if (!s.state.compare_exchange_strong(state, removing, std::memory_order_acq_rel)) continue;
        ::unlink(s.path);
        s.state.store(removed, std::memory_order_release);
    }
    errno = saved_errno;
}

namespace {

// The signal note: written whole before `note_length` says it is there, so a handler reads a whole line.
char note[1024];
std::atomic<std::size_t> note_length{0};

void write_signal_note() noexcept {
    const std::size_t n = note_length.load(std::memory_order_acquire);
    if (n) [[maybe_unused]] const ssize_t written = ::write(2, note, n);
}

}  // namespace

void set_signal_note(const char* line) noexcept {
    note_length.store(0, std::memory_order_release);
    if (!line) return;
    const std::size_t n = std::min(std::strlen(line), sizeof note - 1);
    std::memcpy(note, line, n);
    note_length.store(n, std::memory_order_release);
}

namespace {

constexpr int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int signal_count = int(sizeof cleanup_signals / sizeof cleanup_signals[0]);

// What each signal did before install_signal_cleanup: written before the handler is installed, only
// read afterwards.
struct sigaction previous[signal_count];

int index_of(int sig) {
    for (int i = 0; i < signal_count; ++i)
        if (cleanup_signals[i] == sig) return i;
    return -1;
}

bool is_function(const struct sigaction& a) {
    return (a.sa_flags & SA_SIGINFO) ? a.sa_sigaction != nullptr
                                     : a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

void on_signal(int sig, siginfo_t* info, void* context) {
    remove_registered_temporaries();
    write_signal_note();
    const int i = index_of(sig);
    if (i >= 0 && is_function(previous[i])) {
        // Somebody else's handler: it decides what happens next.
        if (previous[i].sa_flags & SA_SIGINFO)
            previous[i].sa_sigaction(sig, info, context);
        else
            previous[i].sa_handler(sig);
        return;
    }
    // End the process as the signal would have: the default action, delivered as soon as this handler
    // returns (the signal is blocked while it runs), so the exit status names the signal.
    const int saved_errno = errno;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    ::raise(sig);
    errno = saved_errno;
}

}  // namespace
}  // namespace apron::io

namespace apron {

void install_signal_cleanup() {
    static std::atomic<bool> installed{false};
    if (installed.exchange(true)) return;
    struct sigaction action {};
    action.sa_sigaction = io::on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (const int sig : io::cleanup_signals) sigaddset(&action.sa_mask, sig);  // one cleanup at a time
    for (int i = 0; i < io::signal_count; ++i) {
        const int sig = io::cleanup_signals[i];
        if (::sigaction(sig, nullptr, &io::previous[i]) != 0) continue;
        // An ignored signal (nohup's SIGHUP, a background job's SIGINT) does not end the process: leave it.
        if (!(io::previous[i].sa_flags & SA_SIGINFO) && io::previous[i].sa_handler == SIG_IGN) continue;
        ::sigaction(sig, &action, nullptr);
    }
    // A file-size limit (ulimit -f) would end the process by SIGXFSZ in the middle of a write, silently
    // and with its temporary file left behind. Ignored, the write fails with EFBIG instead, which the
    // writers report in one line ("File too large") after removing what they had written. A handler
    // someone installed is kept.
    struct sigaction xfsz {};
    if (::sigaction(SIGXFSZ, nullptr, &xfsz) == 0 && !io::is_function(xfsz)) {
        xfsz.sa_handler = SIG_IGN;
        xfsz.sa_flags = 0;
        sigemptyset(&xfsz.sa_mask);
        ::sigaction(SIGXFSZ, &xfsz, nullptr);
    }
}

}  // namespace apron
