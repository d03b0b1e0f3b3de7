#pragma once
// Helpers shared by the image file tests (tests/test_io*.cpp): random images from a fixed seed, exact
// comparison, byte buffers from text, a scratch directory, and "this must fail with apron::Error naming
// the file" checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/image.hpp"
#include "apron/io.hpp"

namespace apron::iotest {

using ByteVec = std::vector<std::uint8_t>;

inline ByteVec bytes(const std::string& s) { return ByteVec(s.begin(), s.end()); }
// A whole file as text, and text written as a whole file (its folders made first).
inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
inline void write_text(const std::string& path, const std::string& text) {
    if (std::filesystem::path(path).has_parent_path()) std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << path;
}

inline ByteVec concat(ByteVec a, const ByteVec& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Full-range integers; floats include negatives, fractions and values far from [0, 1].
inline Image random_image(int w, int h, int c, PixelType t, unsigned seed) {
    std::mt19937 rng(seed);
    Image img(w, h, c, t);
    for (int y = 0; y < h; ++y)
        for (int i = 0; i < w * c; ++i) {
            switch (t) {
            case PixelType::u8: img.row<std::uint8_t>(y)[i] = std::uint8_t(rng()); break;
            case PixelType::u16: img.row<std::uint16_t>(y)[i] = std::uint16_t(rng()); break;
            case PixelType::f32: img.row<float>(y)[i] = std::uniform_real_distribution<float>(-1e4f, 1e4f)(rng); break;
            }
        }
    return img;
}

// Bitwise equality of shape and pixels (row padding ignored).
inline ::testing::AssertionResult same_pixels(ConstImageView a, ConstImageView b) {
    if (!(a.shape == b.shape))
        return ::testing::AssertionFailure() << "shapes differ: " << a.width() << "x" << a.height() << "x"
                                             << a.channels() << " " << to_string(a.type()) << " vs " << b.width() << "x"
                                             << b.height() << "x" << b.channels() << " " << to_string(b.type());
    for (int y = 0; y < a.height(); ++y)
        if (std::memcmp(a.row_bytes(y), b.row_bytes(y), a.shape.row_bytes()) != 0)
            return ::testing::AssertionFailure() << "row " << y << " differs";
    return ::testing::AssertionSuccess();
}

// Runs `f`, which must throw apron::Error whose one-line message contains `name` (and `fragment`).
inline ::testing::AssertionResult fails_naming(const std::function<void()>& f, const std::string& name,
                                               const std::string& fragment = "") {
    try {
        f();
    } catch (const Error& e) {
        const std::string m = e.what();
        if (m.find(name) == std::string::npos)
            return ::testing::AssertionFailure() << "message does not name '" << name << "': " << m;
        if (m.find(fragment) == std::string::npos)
            return ::testing::AssertionFailure() << "message lacks '" << fragment << "': " << m;
        if (m.find('\n') != std::string::npos) return ::testing::AssertionFailure() << "message is not one line: " << m;
        return ::testing::AssertionSuccess() << m;
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << "not an apron::Error: " << e.what();
    }
    return ::testing::AssertionFailure() << "no error";
}

inline ::testing::AssertionResult decode_fails(const ByteVec& file, const std::string& fragment = "",
                                               const ReadOptions& options = {}) {
    return fails_naming([&] { decode_image(file, "input.img", options); }, "input.img", fragment);
}

// A fresh directory under the system's temporary directory, removed with everything in it.
class ScratchDir {
public:
    ScratchDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "apron-io-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return (path_ / name).string(); }
    const std::filesystem::path& path() const { return path_; }
    // Names in the directory that look like leftover temporary files of write_file_atomically.
    std::vector<std::string> temp_files() const {
        std::vector<std::string> left;
        for (const auto& e : std::filesystem::directory_iterator(path_))
            if (e.path().filename().string().find(".apron-tmp-") != std::string::npos)
                left.push_back(e.path().filename().string());
        return left;
    }

private:
    std::filesystem::path path_;
};

// Every sample of an image, row by row, as one vector.
template <class T>
std::vector<T> pixels_of(const Image& img) {
    std::vector<T> v;
    for (int y = 0; y < img.height(); ++y)
        v.insert(v.end(), img.row<T>(y), img.row<T>(y) + img.width() * img.channels());
    return v;
}

}  // namespace apron::iotest
