#pragma once
// Images and views. A view is a window onto pixels it does not own (host or device memory, with a row
// pitch in bytes), so ROIs, pitched device buffers and file buffers are all the same thing to the backends.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>

namespace apron {

enum class PixelType : std::uint8_t { u8, u16, f32 };
enum class Memory : std::uint8_t { host, device };

constexpr std::size_t bytes_per_sample(PixelType t) {
    return t == PixelType::u8 ? 1 : t == PixelType::u16 ? 2 : 4;
}
constexpr bool is_integer(PixelType t) { return t != PixelType::f32; }
// Largest value of an integer type (used by saturation and the `book` normalisation); 1.0 for f32.
constexpr double type_max(PixelType t) {
    return t == PixelType::u8 ? 255.0 : t == PixelType::u16 ? 65535.0 : 1.0;
}
const char* to_string(PixelType t);
std::optional<PixelType> parse_pixel_type(std::string_view name);

constexpr int max_channels = 4;

// Geometry and type of an image, without the pixels. A volume has depth > 1: `depth` planes of `height` rows
// each, stored one after another as rows of one pitch (plane z's row y is row z * height + y), so a volume
// is a tall image whose planes are cut every `height` rows (docs/volumes.md). Depth 1 is a 2-D image.
struct ImageShape {
    int width = 0, height = 0, channels = 1;
    PixelType type = PixelType::u8;
    int depth = 1;
    std::size_t row_bytes() const { return std::size_t(width) * channels * bytes_per_sample(type); }
    // Rows of every plane: height * depth.
    std::int64_t rows() const { return std::int64_t(height) * depth; }
    std::uint64_t pixels() const { return std::uint64_t(width) * std::uint64_t(height) * std::uint64_t(depth); }
    // One plane's shape (depth 1).
    ImageShape plane() const { return ImageShape{width, height, channels, type}; }
    bool operator==(const ImageShape&) const = default;
};

template <class Byte>
struct BasicImageView {
    Byte* data = nullptr;
    ImageShape shape{};
    std::size_t pitch = 0;  // bytes between the starts of two rows, >= shape.row_bytes()
    Memory memory = Memory::host;

    int width() const { return shape.width; }
    int height() const { return shape.height; }
    int channels() const { return shape.channels; }
    PixelType type() const { return shape.type; }
    bool empty() const { return shape.width <= 0 || shape.height <= 0; }

    Byte* row_bytes(int y) const { return data + std::size_t(y) * pitch; }
    template <class T>
    auto row(int y) const {
        using Q = std::conditional_t<std::is_const_v<Byte>, const T, T>;
        return reinterpret_cast<Q*>(row_bytes(y));
    }
    // A sub-rectangle sharing the same pixels; throws apron::Error if it does not fit.
    BasicImageView roi(int x, int y, int w, int h) const;
    // Plane z of a volume (z < depth), a 2-D view sharing its pixels.
    BasicImageView plane(int z) const {
        return {data + std::size_t(z) * std::size_t(shape.height) * pitch, shape.plane(), pitch, memory};
    }
    // The volume seen as one 2-D image of all its rows (height * depth), for steps that treat every row alike.
    BasicImageView all_rows() const {
        ImageShape s = shape.plane();
        s.height = int(shape.rows());
        return {data, s, pitch, memory};
    }

    // A mutable view is usable wherever a read-only one is expected.
    operator BasicImageView<const std::byte>() const
        requires(!std::is_const_v<Byte>)
    {
        return {data, shape, pitch, memory};
    }
};

using ImageView = BasicImageView<std::byte>;
using ConstImageView = BasicImageView<const std::byte>;

inline ConstImageView as_const(const ImageView& v) {
    return ConstImageView{v.data, v.shape, v.pitch, v.memory};
}

// An owning host image with tightly packed rows (pitch rounded up to 64 bytes so SIMD loads of a row
// start aligned).
// Host memory of an Image. Pinned (page-locked) memory lets the CUDA backend copy at the full PCIe rate
// and overlap copies with compute; it falls back to pageable memory where there is no CUDA device.
enum class HostMemory : unsigned char { pageable, pinned };

class Image {
public:
    Image() = default;
    explicit Image(const ImageShape& shape, HostMemory memory = HostMemory::pageable);
    Image(int width, int height, int channels, PixelType type, HostMemory memory = HostMemory::pageable)
        : Image(ImageShape{width, height, channels, type}, memory) {}
    // A volume's planes follow one another with no gap (rows() rows of one pitch).

    const ImageShape& shape() const { return shape_; }
    int width() const { return shape_.width; }
    int height() const { return shape_.height; }
    int channels() const { return shape_.channels; }
    PixelType type() const { return shape_.type; }
    int depth() const { return shape_.depth; }
    std::size_t pitch() const { return pitch_; }
    bool empty() const { return !storage_; }
    bool pinned() const { return storage_.get_deleter().pinned; }

    ImageView view() { return ImageView{storage_.get(), shape_, pitch_, Memory::host}; }
    ConstImageView view() const { return ConstImageView{storage_.get(), shape_, pitch_, Memory::host}; }
    operator ConstImageView() const { return view(); }

    template <class T> T* row(int y) { return view().row<T>(y); }
    template <class T> const T* row(int y) const { return view().row<T>(y); }

private:
    struct FreeAligned {
        bool pinned;  // no initializer: a nested aggregate must stay default-constructible for unique_ptr (value-initialised: false)
        void operator()(std::byte* p) const;
    };
    ImageShape shape_{};
    std::size_t pitch_ = 0;
    std::unique_ptr<std::byte, FreeAligned> storage_;
};

// Throws apron::Error naming `what` unless the shape is usable (positive sizes and depth, 1-4 channels, and
// width * height * depth * channels * bytes within the address space).
void validate_shape(const ImageShape& shape, const char* what);

// Deep copy of a host view into a new image (same shape, every plane of a volume).
Image copy_of(ConstImageView v);

} // namespace apron
