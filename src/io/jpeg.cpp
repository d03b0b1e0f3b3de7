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
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

// jpeglib.h first: jerror.h's list of codes depends on the configuration jpeglib.h pulls in.
#include <jpeglib.h>
#include <jerror.h>

#include "io/codecs.hpp"

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

bool step_read_header(j_decompress_ptr cinfo, ErrorManager& err, Bytes bytes) {
    if (setjmp(err.jump)) return false;
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(cinfo, TRUE);
    return true;
}

bool step_decompress(j_decompress_ptr cinfo, ErrorManager& err, JSAMPROW* rows, int channels) {
    if (setjmp(err.jump)) return false;
    jpeg_start_decompress(cinfo);
    if (cinfo->output_components != channels || cinfo->output_width != cinfo->image_width ||
        cinfo->output_height != cinfo->image_height) {
        std::snprintf(err.message, sizeof err.message, "unexpected decoder output layout");
        return false;
    }
    while (cinfo->output_scanline < cinfo->output_height)
        jpeg_read_scanlines(cinfo, rows + cinfo->output_scanline, cinfo->output_height - cinfo->output_scanline);
    jpeg_finish_decompress(cinfo);  // reads up to EOI, so a file cut after the last scan is noticed
    return true;
}

bool step_compress(j_compress_ptr cinfo, ErrorManager& err, Destination& dest, ConstImageView image, JSAMPROW* rows,
                   int quality) {
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
    jpeg_start_compress(cinfo, TRUE);
    while (cinfo->next_scanline < cinfo->image_height)
        jpeg_write_scanlines(cinfo, rows + cinfo->next_scanline, cinfo->image_height - cinfo->next_scanline);
    jpeg_finish_compress(cinfo);
    return true;
}

}  // namespace

Image decode_jpeg(Bytes bytes, const std::string& name, const ReadOptions& options) {
    struct Decompressor {
        jpeg_decompress_struct cinfo{};  // zeroed: jpeg_destroy is safe even if creation failed
        ErrorManager err;
        jpeg_progress_mgr progress{};
        ~Decompressor() { jpeg_destroy_decompress(&cinfo); }
    } d;
    install_error_manager(reinterpret_cast<j_common_ptr>(&d.cinfo), d.err);
    auto jpeg_failed = [&]() { fail(name, std::string("bad JPEG file: ") + d.err.message); };

    if (!step_read_header(&d.cinfo, d.err, bytes)) jpeg_failed();
    d.progress.progress_monitor = on_progress;
    d.cinfo.progress = &d.progress;

    int channels = 0;
    switch (d.cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE: d.cinfo.out_color_space = JCS_GRAYSCALE, channels = 1; break;
    case JCS_YCbCr:
    case JCS_RGB: d.cinfo.out_color_space = JCS_RGB, channels = 3; break;
    case JCS_CMYK:
    case JCS_YCCK: fail(name, "CMYK JPEG files are not supported (convert the file to RGB first)");
    default:
        fail(name,
             "JPEG file with an unsupported colour space (" + std::to_string(d.cinfo.num_components) + " components)");
    }
    Image img = allocate_image(name, d.cinfo.image_width, d.cinfo.image_height, channels, PixelType::u8, options);
    std::vector<JSAMPROW> rows(std::size_t(img.height()));
    for (int y = 0; y < img.height(); ++y) rows[y] = reinterpret_cast<JSAMPROW>(img.view().row_bytes(y));
    if (!step_decompress(&d.cinfo, d.err, rows.data(), channels)) jpeg_failed();
    return img;
}

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
    if (!step_compress(&c->cinfo, c->err, c->dest, image, rows.data(), options.jpeg_quality))
        fail(name, std::string("cannot encode JPEG: ") + c->err.message);
    return out;
}

}  // namespace apron::io
