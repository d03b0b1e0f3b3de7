// JPEG through libjpeg(-turbo): gray and YCbCr/RGB files read as u8 with 1 or 3 channels; CMYK/YCCK are
// refused (converting them needs a colour profile we do not have). Written as baseline JPEG at the
// quality of WriteOptions.
//
// libjpeg reports errors through error_exit, which must not return; we longjmp out of it. As in png.cpp,
// every libjpeg call that can fail runs inside a small `step_*` function that owns no C++ objects, so the
// longjmp never skips a destructor; the C++ code around them owns the libjpeg structs and the buffers.
//
// libjpeg only *warns* about corrupt or missing data and fills the rest of the image with grey; a truncated
// or damaged file must be refused, so those warnings are made fatal too.
#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>

// jpeglib.h first: jerror.h's list of codes depends on the configuration jpeglib.h pulls in.
#include <jpeglib.h>
#include <jerror.h>

#include "io/codecs.hpp"
#include "io/exif.hpp"
#include "io/metadata_places.hpp"

namespace apron::io {

namespace {

// A real progressive JPEG has about 10 scans; a crafted one with thousands of tiny scans makes decoding
// quadratic. libjpeg-turbo's own tools use the same kind of limit.
constexpr int max_scans = 500;

struct ErrorManager {
    jpeg_error_mgr base;  // first, so that a j_common_ptr's err converts back to ErrorManager
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:    // the file ends early
    case JWRN_HIT_MARKER:  // a segment ends early
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION: on_error_exit(cinfo);
    default: return;  // harmless: stray bytes between markers, an odd JFIF version or Adobe/ICC marker
    }
}

void on_progress(j_common_ptr cinfo) {
    if (cinfo->is_decompressor && reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > max_scans) {
        auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
        std::snprintf(err->message, sizeof err->message, "more than %d progressive scans", max_scans);
        std::longjmp(err->jump, 1);
    }
}

void install_error_manager(j_common_ptr cinfo, ErrorManager& err) {
    cinfo->err = jpeg_std_error(&err.base);
    err.base.error_exit = on_error_exit;
    err.base.emit_message = on_emit_message;
    err.message[0] = 0;
}

// Destination manager appending to a Buffer in chunks (jpeg_mem_dest would leak its malloc'd buffer
// when compression fails halfway).
struct Destination {
    jpeg_destination_mgr base;  // first, for the cast back
    Buffer* out;
    JOCTET chunk[1 << 14];
};

void dest_init(j_compress_ptr cinfo) {
    auto* d = reinterpret_cast<Destination*>(cinfo->dest);
    d->base.next_output_byte = d->chunk;
    d->base.free_in_buffer = sizeof d->chunk;
}
bool dest_flush(Destination* d, std::size_t n) {
    try {
        d->out->insert(d->out->end(), d->chunk, d->chunk + n);
        return true;
    } catch (...) {
        return false;
    }
}
boolean dest_empty(j_compress_ptr cinfo) {
    auto* d = reinterpret_cast<Destination*>(cinfo->dest);
    if (!dest_flush(d, sizeof d->chunk)) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    dest_init(cinfo);
    return TRUE;
}
void dest_term(j_compress_ptr cinfo) {
    auto* d = reinterpret_cast<Destination*>(cinfo->dest);
    if (!dest_flush(d, sizeof d->chunk - d->base.free_in_buffer)) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
}

// Source manager reading a ByteSource in chunks (probing a file reads only up to the first scan). At the
// end of the data it warns JWRN_JPEG_EOF, which on_emit_message makes fatal, as jpeg_mem_src does.
struct SourceReader {
    jpeg_source_mgr base;  // first, for the cast back
    const ByteSource* source;
    std::uint64_t offset;
    JOCTET chunk[1 << 14];
};

constexpr JOCTET fake_eoi[] = {0xFF, JPEG_EOI};

void src_init(j_decompress_ptr) {}
void src_term(j_decompress_ptr) {}
boolean src_fill(j_decompress_ptr cinfo) {
    auto* r = reinterpret_cast<SourceReader*>(cinfo->src);
    const std::size_t n = r->source->read(r->offset, r->chunk, sizeof r->chunk);
    if (n == 0) {
        WARNMS(cinfo, JWRN_JPEG_EOF);
        r->base.next_input_byte = fake_eoi;
        r->base.bytes_in_buffer = sizeof fake_eoi;
        return TRUE;
    }
    r->offset += n;
    r->base.next_input_byte = r->chunk;
    r->base.bytes_in_buffer = n;
    return TRUE;
}
void src_skip(j_decompress_ptr cinfo, long count) {
    auto* r = reinterpret_cast<SourceReader*>(cinfo->src);
    if (count <= 0) return;
    if (std::size_t(count) <= r->base.bytes_in_buffer) {
        r->base.next_input_byte += count;
        r->base.bytes_in_buffer -= std::size_t(count);
    } else {
        r->offset += std::uint64_t(count) - r->base.bytes_in_buffer;
        r->base.bytes_in_buffer = 0;  // src_fill runs when more is needed
    }
}

// keep_metadata: libjpeg keeps the APP1 (Exif) and APP2 (ICC profile) segments it passes, for metadata().
bool step_read_header(j_decompress_ptr cinfo, ErrorManager& err, const ByteSource& source, SourceReader& reader,
                      bool keep_metadata) {
    if (setjmp(err.jump)) return false;
    jpeg_create_decompress(cinfo);
    if (keep_metadata) {
        jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
        jpeg_save_markers(cinfo, JPEG_APP0 + 2, 0xFFFF);
        jpeg_save_markers(cinfo, JPEG_COM, 0xFFFF);
    }
    if (const Bytes bytes = source.memory(); !bytes.empty()) {
        jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
    } else {
        reader.source = &source;
        reader.offset = 0;
        reader.base.init_source = src_init;
        reader.base.fill_input_buffer = src_fill;
        reader.base.skip_input_data = src_skip;
        reader.base.resync_to_restart = jpeg_resync_to_restart;
        reader.base.term_source = src_term;
        reader.base.bytes_in_buffer = 0;
        reader.base.next_input_byte = nullptr;
        cinfo->src = &reader.base;
    }
    jpeg_read_header(cinfo, TRUE);
    return true;
}

bool step_read_icc(j_decompress_ptr cinfo, ErrorManager& err, JOCTET** icc, unsigned int* bytes) {
    if (setjmp(err.jump)) return false;
    return jpeg_read_icc_profile(cinfo, icc, bytes);
}

// A file in several scans (progressive, or one component per scan) is decoded through whole-image
// arrays of DCT coefficients, 2 bytes per coefficient, before any row comes out; a single-scan file
// needs only a row of blocks.
std::uint64_t coefficient_bytes(const jpeg_decompress_struct& c) {
    if (!c.progressive_mode && c.comps_in_scan >= c.num_components) return 0;
    int max_h = 1, max_v = 1;
    for (int i = 0; i < c.num_components; ++i) {
        max_h = std::max(max_h, c.comp_info[i].h_samp_factor);
        max_v = std::max(max_v, c.comp_info[i].v_samp_factor);
    }
    std::uint64_t total = 0;
    for (int i = 0; i < c.num_components; ++i) {
        const std::uint64_t h = std::uint64_t(std::max(1, c.comp_info[i].h_samp_factor));
        const std::uint64_t v = std::uint64_t(std::max(1, c.comp_info[i].v_samp_factor));
        const std::uint64_t blocks_w = (std::uint64_t(c.image_width) * h + 8 * max_h - 1) / (8 * max_h);
        const std::uint64_t blocks_h = (std::uint64_t(c.image_height) * v + 8 * max_v - 1) / (8 * max_v);
        // libjpeg rounds each array up to whole MCUs.
        total += (blocks_w + h - 1) / h * h * ((blocks_h + v - 1) / v * v) * DCTSIZE2 * sizeof(JCOEF);
    }
    return total;
}

// Rows go straight into the image, a few at a time (no array of row pointers as tall as the image).
bool step_decompress(j_decompress_ptr cinfo, ErrorManager& err, std::byte* image, std::size_t pitch, int channels) {
    if (setjmp(err.jump)) return false;
    jpeg_start_decompress(cinfo);
    if (cinfo->output_components != channels || cinfo->output_width != cinfo->image_width ||
        cinfo->output_height != cinfo->image_height) {
        std::snprintf(err.message, sizeof err.message, "unexpected decoder output layout");
        return false;
    }
    JSAMPROW rows[16];
    while (cinfo->output_scanline < cinfo->output_height) {
        const JDIMENSION first = cinfo->output_scanline;
        const JDIMENSION count = std::min<JDIMENSION>(16, cinfo->output_height - first);
        for (JDIMENSION i = 0; i < count; ++i) rows[i] = reinterpret_cast<JSAMPROW>(image + std::size_t(first + i) * pitch);
        jpeg_read_scanlines(cinfo, rows, count);
    }
    jpeg_finish_decompress(cinfo);  // reads up to EOI, so a file cut after the last scan is noticed
    return true;
}

// exif: the APP1 segment's payload ("Exif\0\0" and the block), or empty; icc: the profile, or empty.
// density: the JFIF density, or null; comment: a COM segment's text, or empty.
bool step_compress(j_compress_ptr cinfo, ErrorManager& err, Destination& dest, ConstImageView image, JSAMPROW* rows,
                   int quality, Bytes exif, Bytes icc, const JpegDensity* density, Bytes comment) {
    if (setjmp(err.jump)) return false;
    jpeg_create_compress(cinfo);
    dest.base.init_destination = dest_init;
    dest.base.empty_output_buffer = dest_empty;
    dest.base.term_destination = dest_term;
    cinfo->dest = &dest.base;
    cinfo->image_width = JDIMENSION(image.width());
    cinfo->image_height = JDIMENSION(image.height());
    cinfo->input_components = image.channels();
    cinfo->in_color_space = image.channels() == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, quality, TRUE);
    if (density) {
        cinfo->density_unit = density->unit;
        cinfo->X_density = density->x;
        cinfo->Y_density = density->y;
    }
    jpeg_start_compress(cinfo, TRUE);
    if (!comment.empty()) jpeg_write_marker(cinfo, JPEG_COM, comment.data(), unsigned(comment.size()));
    if (!exif.empty()) jpeg_write_marker(cinfo, JPEG_APP0 + 1, exif.data(), unsigned(exif.size()));
    if (!icc.empty()) jpeg_write_icc_profile(cinfo, icc.data(), unsigned(icc.size()));
    while (cinfo->next_scanline < cinfo->image_height)
        jpeg_write_scanlines(cinfo, rows + cinfo->next_scanline, cinfo->image_height - cinfo->next_scanline);
    jpeg_finish_compress(cinfo);
    return true;
}

}  // namespace

namespace {

struct Decompressor {
    jpeg_decompress_struct cinfo{};  // zeroed: jpeg_destroy is safe even if creation failed
    ErrorManager err;
    jpeg_progress_mgr progress{};
    SourceReader reader{};
    ~Decompressor() { jpeg_destroy_decompress(&cinfo); }
};

// The header (markers up to the first scan), then on request the pixels.
class JpegReader {
public:
    JpegReader(const ByteSource& source, const std::string& name, bool keep_metadata = false)
        : name_(name), d_(std::make_unique<Decompressor>()) {  // the source's chunk is too big for the stack
        install_error_manager(reinterpret_cast<j_common_ptr>(&d_->cinfo), d_->err);
        if (!step_read_header(&d_->cinfo, d_->err, source, d_->reader, keep_metadata)) failed();
        d_->progress.progress_monitor = on_progress;
        d_->cinfo.progress = &d_->progress;
    }

    ImageShape read_header(const ReadOptions& options, std::uint64_t file_bytes) {
        jpeg_decompress_struct& c = d_->cinfo;
        switch (c.jpeg_color_space) {
        case JCS_GRAYSCALE: c.out_color_space = JCS_GRAYSCALE, channels_ = 1; break;
        case JCS_YCbCr:
        case JCS_RGB: c.out_color_space = JCS_RGB, channels_ = 3; break;
        case JCS_CMYK:
        case JCS_YCCK: fail(name_, "CMYK JPEG files are not supported (convert the file to RGB first)");
        default:
            fail(name_,
                 "JPEG file with an unsupported colour space (" + std::to_string(c.num_components) + " components)");
        }
        held_ = {file_bytes, coefficient_bytes(c)};
        return check_image(name_, c.image_width, c.image_height, channels_, PixelType::u8, options, held_);
    }
    const Held& held() const { return held_; }

    void read_pixels(Image& img) {
        if (!step_decompress(&d_->cinfo, d_->err, img.view().data, img.view().pitch, channels_)) failed();
    }

    // The Exif block and the colour profile among the segments kept (keep_metadata). The profile's
    // segments are put together by libjpeg, which leaves out a set with one missing or out of order.
    ImageMetadata metadata() {
        ImageMetadata m;
        static constexpr std::uint8_t exif_id[] = {'E', 'x', 'i', 'f', 0, 0};
        for (jpeg_saved_marker_ptr s = d_->cinfo.marker_list; s; s = s->next)
            if (s->marker == JPEG_APP0 + 1 && s->data_length > sizeof exif_id &&
                std::equal(std::begin(exif_id), std::end(exif_id), s->data) && m.exif.empty())
                m.exif.assign(s->data + sizeof exif_id, s->data + s->data_length);
            else if (s->marker == JPEG_COM && m.description.empty())
                m.description.assign(reinterpret_cast<const char*>(s->data), s->data_length);
        // A JFIF density in dots per inch or per centimetre; the default aspect ratio 1:1 says nothing.
        const jpeg_decompress_struct& c = d_->cinfo;
        if (c.saw_JFIF_marker && (c.density_unit == 1 || c.density_unit == 2) && c.X_density > 0 && c.Y_density > 0) {
            m.x_resolution = c.X_density;
            m.y_resolution = c.Y_density;
            m.resolution_unit = c.density_unit == 1 ? ResolutionUnit::inch : ResolutionUnit::centimetre;
        }
        JOCTET* icc = nullptr;
        unsigned int icc_bytes = 0;
        if (step_read_icc(&d_->cinfo, d_->err, &icc, &icc_bytes) && icc) {
            m.icc_profile.assign(icc, icc + icc_bytes);
            std::free(icc);
        }
        return m;
    }

private:
    [[noreturn]] void failed() const { fail(name_, std::string("bad JPEG file: ") + d_->err.message); }

    const std::string& name_;
    std::unique_ptr<Decompressor> d_;
    int channels_ = 0;
    Held held_;
};

}  // namespace

Image decode_jpeg(Bytes bytes, const std::string& name, const ReadOptions& options) {
    return decode_jpeg(MemorySource(bytes), name, options);
}

// From memory or from a file read in chunks as libjpeg asks (the file's size is counted either way, as the
// prober does).
Image decode_jpeg(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    JpegReader reader(source, name);
    const ImageShape shape = reader.read_header(options, source.size());
    Image img = allocate_image(name, std::uint64_t(shape.width), std::uint64_t(shape.height), shape.channels,
                               shape.type, options, reader.held());
    reader.read_pixels(img);
    return img;
}

ImageShape probe_jpeg(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    JpegReader reader(source, name);
    return reader.read_header(options, source.size());
}

ImageMetadata metadata_jpeg(const ByteSource& source, const std::string& name) {
    JpegReader reader(source, name, true);
    return reader.metadata();
}

namespace {

// The APP1 segment's payload for `m`: "Exif\0\0" and the Exif block, or nothing. A segment holds at most
// 65533 bytes: a larger block (a big maker note or thumbnail) is reduced to its orientation.
std::vector<std::uint8_t> app1_exif(const ImageMetadata& m) {
    static constexpr std::uint8_t exif_id[] = {'E', 'x', 'i', 'f', 0, 0};
    const std::vector<std::uint8_t> block = exif_to_write(m, 65533 - sizeof exif_id);
    if (block.empty()) return {};
    std::vector<std::uint8_t> payload(std::begin(exif_id), std::end(exif_id));
    payload.insert(payload.end(), block.begin(), block.end());
    return payload;
}

}  // namespace

Buffer encode_jpeg(ConstImageView image, const std::string& name, const WriteOptions& options) {
    if (options.jpeg_quality < 1 || options.jpeg_quality > 100)
        fail(name, "JPEG quality " + std::to_string(options.jpeg_quality) + " is outside 1..100");
    Buffer out;
    struct Compressor {
        jpeg_compress_struct cinfo{};
        ErrorManager err;
        Destination dest{};
        ~Compressor() { jpeg_destroy_compress(&cinfo); }
    };
    auto c = std::make_unique<Compressor>();  // the destination's chunk is too big for the stack
    c->dest.out = &out;
    install_error_manager(reinterpret_cast<j_common_ptr>(&c->cinfo), c->err);
    // libjpeg reads the rows without writing to them; its API simply is not const-correct.
    std::vector<JSAMPROW> rows(std::size_t(image.height()));
    for (int y = 0; y < image.height(); ++y)
        rows[y] = reinterpret_cast<JSAMPROW>(const_cast<std::byte*>(image.row_bytes(y)));
    const ImageMetadata& m = options.metadata;
    // A profile is split over at most 255 APP2 segments of 65519 bytes (its sequence numbers are bytes);
    // one larger does not fit a JPEG and is left out.
    const Bytes icc = m.icc_profile.size() <= 255 * std::size_t(65519) ? Bytes(m.icc_profile) : Bytes();
    JpegDensity density;
    const bool has_density = jpeg_density(m, density);
    const Bytes comment = m.description.size() <= max_jpeg_comment
                              ? Bytes(reinterpret_cast<const std::uint8_t*>(m.description.data()), m.description.size())
                              : Bytes();
    if (!step_compress(&c->cinfo, c->err, c->dest, image, rows.data(), options.jpeg_quality, app1_exif(m), icc,
                       has_density ? &density : nullptr, comment))
        fail(name, std::string("cannot encode JPEG: ") + c->err.message);
    return out;
}

}  // namespace apron::io
