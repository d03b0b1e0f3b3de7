// Fuzz target: the row sources of the streaming path (open_row_source: binary PNM/PAM and PFM rows at fixed
// offsets, TIFF strips and tiles through libtiff, other formats decoded whole). The input is written to a
// temporary file, as the streaming path reads only files, then opened and read in a few bands: the first,
// the last, then the middle (behind the last, and starting mid-strip in most TIFF files).
//
// Besides crashes and sanitizer reports, a difference is a finding: where read_image decodes the same file
// under the same limits, every band must equal the same rows of its image, bit for bit.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "decode_target.hpp"
#include "io/row_stream.hpp"

namespace {

// One file per process, rewritten for every input (libFuzzer's -jobs runs processes, not threads).
struct InputFile {
    std::string path;
    int fd = -1;
    InputFile() {
        const char* dir = std::getenv("TMPDIR");
        std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/apron-fuzz-row-source-XXXXXX";
        fd = ::mkstemp(pattern.data());
        if (fd < 0) std::abort();
        path = pattern;
    }
    ~InputFile() {
        ::close(fd);
        ::unlink(path.c_str());
    }
    void write(const std::uint8_t* data, std::size_t size) const {
        if (::ftruncate(fd, 0) != 0) std::abort();
        for (std::size_t done = 0; done < size;) {
            const ssize_t n = ::pwrite(fd, data + done, size - done, off_t(done));
            if (n <= 0) std::abort();
            done += std::size_t(n);
        }
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace apron;
    static const InputFile file;
    file.write(data, size);
    constexpr std::uint64_t max_pixels = std::uint64_t(1) << 22;
    const std::uint64_t budget = fuzz::fuzz_memory_budget_mb << 20;

    ReadOptions read;
    read.max_pixels = max_pixels;
    read.memory_budget = budget;
    Image whole;
    try {
        whole = read_image(file.path, read);
    } catch (const Error&) {
    }

    io::SourceOptions options;
    options.max_pixels = max_pixels;
    options.whole_decode_budget = budget;
    options.threads = 2;
    try {
        const auto source = io::open_row_source(file.path, options);
        const ImageShape s = source->shape();
        if (!whole.empty() && !(whole.shape() == s)) std::abort();  // the same file, the same shape
        // Bands of at most 8 rows and 16 MiB, however wide the image.
        const int rows = int(std::clamp<std::uint64_t>((std::uint64_t(16) << 20) / std::max<std::size_t>(1, s.row_bytes()), 1, 8));
        // The first band, the last, then one from the middle: behind the last, and mid-strip in most TIFFs.
        const int starts[] = {0, std::max(0, s.height - rows), s.height / 2};
        Image band(s.width, rows, s.channels, s.type);
        for (const int y0 : starts) {
            const int n = std::min(rows, s.height - y0);
            const ImageView view = band.view().roi(0, 0, s.width, n);
            source->read_rows(y0, view);
            if (!whole.empty())
                for (int r = 0; r < n; ++r)
                    if (std::memcmp(view.row_bytes(r), whole.view().row_bytes(y0 + r), s.row_bytes()) != 0) std::abort();
        }
    } catch (const Error&) {
        // Refusing a file read_image decodes is a finding too: the rows are there.
        if (!whole.empty()) std::abort();
    }
    return 0;
}
