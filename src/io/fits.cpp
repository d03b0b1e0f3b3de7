// FITS images and cubes through cfitsio. The image is the primary HDU's, or the first extension's when the
// primary HDU holds no data (an IMAGE extension, or a tile-compressed image stored in a binary table, which
// cfitsio decompresses: the usual layout of .fits.fz files). Samples as apron's types:
//   BITPIX 8                 -> u8
//   BITPIX 16, BZERO 32768   -> u16 (FITS's unsigned 16-bit convention)
//   BITPIX -32               -> f32, NaN kept
//   BITPIX 16 (signed), BITPIX 8 with BZERO -128 (signed bytes) -> f32, every value exact
// and BSCALE 1. Everything else (BITPIX 32 and 64, whose integers f32 cannot hold; BITPIX -64, which f32
// would round; scaled samples, BSCALE != 1 or another BZERO) is refused by name: a precision loss is never
// made silently. BLANK is not applied: the samples keep their stored values and the card goes with the
// header (fit_metadata leaves it out where the output's samples are no longer the input's integers).
//
// NAXIS 2 is one image, NAXIS1 wide and NAXIS2 tall, its rows in the file's order (row 0 is the first row
// of the file, which FITS viewers draw at the bottom; apron turns nothing). NAXIS 3 is a cube of NAXIS3
// planes, each a page (decode_fits_pages, count_fits_pages): read_image refuses a cube unless
// ReadOptions::page picks a plane, as a multi-page TIFF. A cube of 2 to 4 planes is still planes, never
// channels. NAXIS 1, NAXIS above 3 and a file without an image are refused by name.
//
// The header's cards but the structural ones go into ImageMetadata::fits_cards (OBJECT, DATE-OBS, the WCS,
// HISTORY, COMMENT, long strings with their CONTINUE cards), and a FITS output writes them back after its
// own structural cards.
//
// Reading. A file in memory (decode_image, the fuzz target) is opened by cfitsio whole
// (fits_open_memfile), and cfitsio reads the pixels. A file on disk gives cfitsio only its headers (the
// blocks up to each END card, read here); an uncompressed image's samples lie at fixed offsets (big-endian,
// from the data unit's start), so they are read straight into the image in parallel parts as binary PNM's
// are (read_fixed_rows), and streamed by rows the same way (open_fits_rows). Only a tile-compressed image
// is read whole into memory for cfitsio to decompress (the file counts against the memory budget, as a TIFF
// file does). A cube read as one volume (decode_fits_volume, read_volume) is opened and its header parsed
// once: an uncompressed cube's planes lie one after another, so the whole cube is one parallel read of rows
// into the volume; a compressed one is read whole once, and cfitsio decompresses plane after plane from it.
// Writing goes through cfitsio into memory (fits_create_memfile), uncompressed: BITPIX 8, 16 with BZERO
// 32768, or -32, every plane of a cube into the one file.
//
// cfitsio is built reentrant on Debian (fits_is_reentrant), so the batch's reading threads may each open
// files at once. Its messages are taken from the status code alone (fits_get_errstatus): its message
// stack is shared by every thread.
//
// Damaged files. cfitsio 4.2 (Debian 12's) trusts its input: fuzz_fits made it read past a Rice tile, divide
// by zero, allocate petabytes, grow a buffer forever, overrun a message buffer and damage its state for the
// next file. What it would trip on is checked here first and refused in one line: the headers it parses
// (check_header_text), the tiling of a compressed image (check_tiling) and every tile before it is decoded
// (check_tiles); HCOMPRESS and PLIO tiles, whose decoders are not even given their length, are refused by
// name. docs/formats.md lists the checks; fuzz/corpus/fuzz_fits/regress-*.fits are the files that crashed it.
#include "apron/memory.hpp"
#include "io/codecs.hpp"
#include "io/metadata_places.hpp"
#include "io/row_stream.hpp"

#if APRON_HAVE_FITS

#include <fitsio.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>

namespace apron::io {

namespace {

constexpr std::uint64_t fits_block = 2880;  // FITS files are made of 2880-byte blocks
constexpr std::size_t card_bytes = 80;
constexpr int most_axes = 9;  // axes asked of cfitsio; NAXIS itself comes whole

std::string cfitsio_text(int status) {
    char text[FLEN_STATUS] = {};
    fits_get_errstatus(status, text);
    return text;
}

[[noreturn]] void bad_fits(const std::string& name, const std::string& what, int status) {
    fail(name, "bad FITS file: " + what + " (cfitsio: " + cfitsio_text(status) + ")");
}

std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

// A FITS file cfitsio reads from bytes in memory (never written to); closed with the object. cfitsio keeps
// the addresses of the pointer and the size it was given: the object never moves. cfitsio reads whole
// 2880-byte blocks, the last one too, whatever the size it was given: a file whose length is not a whole
// number of blocks (the padding of its last one cut off) is read from a copy padded with zeros, which FITS
// files are padded with.
class FitsMemory {
public:
    FitsMemory(Bytes bytes, const std::string& name)
        : data_(const_cast<std::uint8_t*>(bytes.data())), size_(bytes.size()) {
        if (size_ % fits_block != 0) {
            try {
                padded_.assign(bytes.begin(), bytes.end());
                padded_.resize((size_ / fits_block + 1) * fits_block, 0);
            } catch (const std::bad_alloc&) {
                fail(name, "out of host memory for the file (" + format_bytes(size_) + ")");
            }
            data_ = padded_.data();
            size_ = padded_.size();
        }
        int status = 0;
        if (fits_open_memfile(&f_, name.c_str(), READONLY, &data_, &size_, 0, nullptr, &status)) {
            f_ = nullptr;
            bad_fits(name, "cannot read the header", status);
        }
    }
    ~FitsMemory() {
        int status = 0;
        if (f_) fits_close_file(f_, &status);
    }
    FitsMemory(const FitsMemory&) = delete;
    FitsMemory& operator=(const FitsMemory&) = delete;
    fitsfile* get() const { return f_; }

private:
    Buffer padded_;
    void* data_;
    std::size_t size_;
    fitsfile* f_ = nullptr;
};

bool is_end_card(const std::uint8_t* card) { return std::memcmp(card, "END     ", 8) == 0; }

// The commentary cards cfitsio writes into every new image header (a COMMENT citing the FITS standard), as
// this cfitsio writes them: apron's FITS outputs carry them anyway, so they are not carried from an input
// (where they would double with every round trip, and be reported lost from outputs that never needed them).
const std::vector<std::string>& cfitsio_own_cards() {
    static const std::vector<std::string> cards = [] {
        std::vector<std::string> own;
        void* data = std::malloc(fits_block);
        std::size_t size = fits_block;
        fitsfile* f = nullptr;
        int status = 0;
        long long axes[2] = {1, 1};
        if (data && !fits_create_memfile(&f, &data, &size, 0, std::realloc, &status) &&
            !fits_create_imgll(f, BYTE_IMG, 2, axes, &status)) {
            int keys = 0;
            fits_get_hdrspace(f, &keys, nullptr, &status);
            for (int k = 1; k <= keys && !status; ++k) {
                char card[FLEN_CARD] = {};
                if (fits_read_record(f, k, card, &status)) break;
                std::string text(card);
                while (!text.empty() && text.back() == ' ') text.pop_back();
                if (text.rfind("COMMENT", 0) == 0) own.push_back(std::move(text));
            }
        }
        status = 0;
        if (f) fits_close_file(f, &status);
        std::free(data);
        return own;
    }();
    return cards;
}

// The header that starts at `offset`: its blocks up to and with the one holding its END card (or up to the
// end of the file, where cfitsio then says what is wrong).
Buffer header_blocks(const ByteSource& source, std::uint64_t offset) {
    Buffer out;
    constexpr std::size_t chunk = 16 * fits_block;
    for (std::uint64_t at = offset;; at += chunk) {
        const std::size_t old = out.size();
        out.resize(old + chunk);
        const std::size_t got = source.read(at, out.data() + old, chunk);
        out.resize(old + got);
        for (std::size_t b = old; b + fits_block <= out.size(); b += fits_block)
            for (std::size_t c = b; c < b + fits_block; c += card_bytes)
                if (is_end_card(out.data() + c)) {
                    out.resize(b + fits_block);
                    return out;
                }
        if (got < chunk) return out;
    }
}

// How the file's samples become the image's.
enum class Stored : unsigned char { u8, u16, f32, i8, i16 };  // i8 and i16 become f32

std::size_t stored_bytes(Stored s) {
    return s == Stored::u8 || s == Stored::i8 ? 1 : s == Stored::f32 ? 4 : 2;
}

struct FitsLayout {
    std::uint64_t width = 0, height = 0, planes = 1;
    int naxis = 2;
    Stored stored = Stored::u8;
    PixelType type = PixelType::u8;
    int hdu = 1;              // 1: the primary HDU, 2: the first extension
    bool compressed = false;  // a tile-compressed image (a binary table cfitsio decompresses)
    std::uint64_t data_offset = 0;  // uncompressed: the data unit's first byte
    std::uint64_t tile_height = 1, tile_pixels = 0;  // compressed: ZTILE2, and the pixels of a whole tile

    std::uint64_t plane_bytes() const { return saturating_product(width * height, stored_bytes(stored)); }
    // Rows read through cfitsio at once (into a buffer when the image's rows are padded): about 1 MiB, and
    // whole tiles of a compressed image, so that no tile is decompressed twice.
    std::uint64_t chunk_rows() const {
        const std::uint64_t row = std::max<std::uint64_t>(1, width * bytes_per_sample(type));
        return std::clamp<std::uint64_t>(std::max<std::uint64_t>((std::uint64_t(1) << 20) / row, compressed ? tile_height : 1), 1,
                                         height);
    }
};

std::string axes_text(int naxis, const long long* axes) {
    std::string s;
    for (int k = 0; k < std::min(naxis, most_axes); ++k) s += (k ? " x " : "") + std::to_string(axes[k]);
    if (naxis > most_axes) s += " x ...";
    return s;
}

std::string number_text(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", v);
    return b;
}

// A keyword's value as a double; `fallback` when the header lacks it.
double key_or(fitsfile* f, const char* key, double fallback, const std::string& name) {
    double v = fallback;
    int status = 0;
    if (fits_read_key(f, TDOUBLE, key, &v, nullptr, &status)) {
        if (status == KEY_NO_EXIST) return fallback;
        bad_fits(name, std::string("the ") + key + " card", status);
    }
    return v;
}

// The samples of BITPIX `bitpix` scaled by BSCALE/BZERO as apron's, or the refusal naming what the file holds.
Stored sample_kind(int bitpix, double bscale, double bzero, const std::string& name) {
    const std::string reads =
        "; apron reads BITPIX 8 (u8), 16 with BZERO 32768 (u16), -32 (f32), and 16 or 8 with BZERO -128 (signed, as f32)";
    if (bscale == 1) {
        if (bitpix == 8 && bzero == 0) return Stored::u8;
        if (bitpix == 8 && bzero == -128) return Stored::i8;
        if (bitpix == 16 && bzero == 32768) return Stored::u16;
        if (bitpix == 16 && bzero == 0) return Stored::i16;
        if (bitpix == -32 && bzero == 0) return Stored::f32;
    }
    switch (bitpix) {
    case 32:
    case 64:
        fail(name, "FITS image of " + std::to_string(bitpix) + "-bit integers (BITPIX " + std::to_string(bitpix) + reads +
                       "; f32 cannot hold every " + std::to_string(bitpix) +
                       "-bit integer, so it is refused rather than rounded)");
    case -64:
        fail(name, "FITS image of 64-bit floats (BITPIX -64)" + reads +
                       "; f64 to f32 would lose precision, so it is refused rather than rounded (write it as BITPIX -32 "
                       "first if f32 is what you want)");
    case 8:
    case 16:
    case -32:
        fail(name, "FITS image of scaled samples (BITPIX " + std::to_string(bitpix) + ", BSCALE " + number_text(bscale) +
                       ", BZERO " + number_text(bzero) + ")" + reads +
                       " with BSCALE 1, as stored (write the physical values as BITPIX -32 first)");
    default: fail(name, "bad FITS file: BITPIX " + std::to_string(bitpix) + " is not a FITS sample type");
    }
}

// The headers of a FITS file and the layout of its image, then, on request, its pixels.
class FitsReader {
public:
    FitsReader(const ByteSource& source, const std::string& name) : source_(source), name_(name) {
        if (const Bytes whole = source.memory(); !whole.empty()) {
            whole_ = true;
            open(whole);
            return;
        }
        // A file read on demand: cfitsio gets the primary header, and the first extension's when the primary
        // HDU is empty (no data lies between them then).
        bytes_ = header_blocks(source, 0);
        check_header_text(Bytes(bytes_), 0, "the primary header");
        std::unique_ptr<FitsMemory> primary = std::make_unique<FitsMemory>(Bytes(bytes_), name_);
        if (primary_is_empty(primary->get()) && source.size() > bytes_.size()) {
            primary.reset();
            const Buffer next = header_blocks(source, bytes_.size());
            bytes_.insert(bytes_.end(), next.begin(), next.end());
        }
        primary.reset();
        open(Bytes(bytes_));
    }

    const FitsLayout& layout() const { return layout_; }
    int planes() const { return int(layout_.planes); }

    // The file (held whole when in memory or tile-compressed) and cfitsio's buffers besides the image.
    Held held() const {
        Held h;
        const bool via_cfitsio = whole_ || layout_.compressed;
        h.file_bytes = via_cfitsio ? source_.size() : 0;
        if (via_cfitsio)
            h.decoder_bytes = layout_.chunk_rows() * layout_.width * bytes_per_sample(layout_.type) +
                              (layout_.compressed ? saturating_product(layout_.tile_pixels, 16) : 0);  // cfitsio's tile buffers
        return h;
    }

    // The plane read_image reads for `page`: a cube needs one named; -1 is an image's only plane.
    int plane_for(int page) const {
        if (page < 0 && layout_.planes > 1)
            fail(name_, "a FITS cube of " + std::to_string(layout_.planes) + " planes (NAXIS3 = " + std::to_string(layout_.planes) +
                            "), and one image was asked for (apron filter writes every plane to a .fits or .tif output; the "
                            "library reads them with read_pages, or one with ReadOptions::page)");
        const int p = std::max(page, 0);
        if (std::uint64_t(p) >= layout_.planes)
            fail(name_, "no page " + std::to_string(p) + " (the FITS file has " + std::to_string(layout_.planes) +
                            (layout_.planes == 1 ? " plane)" : " planes)"));
        return p;
    }

    ImageShape shape(const ReadOptions& options, std::uint64_t pages_bytes = 0) const {
        Held h = held();
        h.pages_bytes = pages_bytes;
        return check_image(name_, layout_.width, layout_.height, 1, layout_.type, options, h);
    }

    // Refuses an uncompressed image whose data unit the file does not hold, before any pixel is allocated.
    void check_complete() const {
        if (layout_.compressed) return;
        const std::uint64_t want = saturating_product(layout_.plane_bytes(), layout_.planes);
        const std::uint64_t size = source_.size();
        if (layout_.data_offset > size || want > size - layout_.data_offset)
            fail(name_, "truncated FITS file: the header promises " + std::to_string(want) + " bytes of samples from byte " +
                            std::to_string(layout_.data_offset) + ", and the file has " + std::to_string(size) + " bytes");
    }

    // Plane `plane`, rows [y0, y0 + out.height()), into `out` (the image's type, width and one channel).
    void read_rows(int plane, int y0, ImageView out, int threads) {
        if (!whole_ && !layout_.compressed) return read_stored_rows(plane, y0, out, threads);
        if (!whole_) load_whole();
        read_through_cfitsio(plane, y0, out);
    }

    // Every plane into `volume` (planes() planes of the image's shape). An uncompressed cube's planes lie one
    // after another in the file as the volume's do in memory (plane z's row y is row z * height + y of
    // both), so the cube is read as the rows of one tall image: one parallel read, no plane apart. Through
    // cfitsio (a file in memory, or tile-compressed: loaded once, not once a plane), plane by plane, each
    // plane's tiles checked before it is decoded, as read_image reads one.
    void read_volume(ImageView volume, int threads) {
        if (!whole_ && !layout_.compressed && volume.shape.rows() <= INT_MAX)
            return read_stored_rows(0, 0, volume.all_rows(), threads);
        for (int z = 0; z < volume.shape.depth; ++z) read_rows(z, 0, volume.plane(z), threads);
    }

    ImageMetadata metadata() const {
        ImageMetadata m;
        m.fits_cards = cards_;
        return m;
    }

private:
    static bool primary_is_empty(fitsfile* f) {
        int status = 0, bitpix = 0, naxis = 0;
        long long axes[most_axes] = {};
        if (fits_get_img_paramll(f, most_axes, &bitpix, &naxis, axes, &status)) return false;  // open() says why
        return naxis == 0 || std::any_of(axes, axes + std::min(naxis, most_axes), [](long long n) { return n == 0; });
    }

    // What cfitsio 4.2 is not safe against in a header, refused before it parses the header at `offset`:
    // cards it would read past or misread into garbage (found by fuzz_fits: a NUL inside a card left its
    // state damaged for the next file it opened; a table header whose mandatory cards were out of place had
    // it allocate petabytes from an unset column count). So the header must be text (no control bytes: FITS
    // headers are ASCII, and cfitsio reads cards as C strings) up to its END card, and begin with the
    // mandatory cards in the standard's order, each an integer where one is due: SIMPLE or XTENSION, BITPIX,
    // NAXIS (0 to 999), NAXIS1..NAXISn; an extension's PCOUNT and GCOUNT; a binary table's TFIELDS (0 to 999).
    // And a tile-compressed image's keywords that cfitsio 4.2 divides by as it opens the extension, unchecked:
    // ZNAXIS 1 to 6, every ZNAXISn and ZTILEn at least 1, and a Rice block size (ZVAL1) other than 0. And
    // every keyword cfitsio reads as a number or a logical while it opens an image or a tile table (numeric_key)
    // must hold one, in at most 28 characters: cfitsio 4.2 writes a value it cannot convert into a message
    // buffer 2 bytes too short for 29 or more (a crash under _FORTIFY_SOURCE, a stack overrun without).
    void check_header_text(Bytes bytes, std::uint64_t offset, const char* which) const {
        if (offset >= bytes.size()) return;  // no such header: cfitsio says the file ends
        const auto bad = [&](const std::string& why) { fail(name_, std::string("bad FITS file: ") + which + " " + why); };
        const auto card_at = [&](std::uint64_t k) -> const char* {
            const std::uint64_t at = offset + k * card_bytes;
            return at + card_bytes <= bytes.size() ? reinterpret_cast<const char*>(bytes.data() + at) : nullptr;
        };
        // The Z keywords of a tile-compressed image, every card of each (cfitsio finds a keyword from where it
        // last read, so of two cards with one keyword either may be the one it takes).
        std::multimap<std::string, std::string> z;
        for (std::uint64_t k = 0;; ++k) {
            const char* card = card_at(k);
            if (!card) break;
            for (std::size_t i = 0; i < card_bytes; ++i) {
                const auto c = static_cast<unsigned char>(card[i]);
                if (c < 0x20 || c == 0x7f)
                    bad("holds a control byte (" + std::to_string(c) + ") in card " + std::to_string(k + 1) + "; FITS headers are text");
            }
            if (std::memcmp(card, "END     ", 8) == 0) break;
            if (card[8] == '=' && card[9] == ' ') {
                std::string keyword(card, 8);
                keyword.erase(keyword.find_last_not_of(' ') + 1);
                // An unquoted value is a number, a logical or a complex number: cfitsio 4.2 copies a longer one
                // (up to the card's 70 columns) into its 70-byte column name field with its NUL (found by fuzz_fits).
                if (std::string value(card + 10, card_bytes - 10); value.find_first_not_of(' ') != std::string::npos &&
                                                                    value[value.find_first_not_of(' ')] != '\'') {
                    if (const std::size_t slash = value.find('/'); slash != std::string::npos) value.resize(slash);
                    value.erase(0, value.find_first_not_of(' '));
                    value.erase(value.find_last_not_of(' ') + 1);
                    if (value.size() > 60)
                        bad("has " + keyword + " = " + value.substr(0, 40) + "..., an unquoted value of " + std::to_string(value.size()) +
                            " characters (a string is quoted)");
                }
                if (const int kind = numeric_key(keyword); kind != 0) {
                    std::string value(card + 10, card_bytes - 10);
                    if (const std::size_t slash = value.find('/'); slash != std::string::npos) value.resize(slash);
                    value.erase(0, value.find_first_not_of(' '));
                    value.erase(value.find_last_not_of(' ') + 1);
                    if (!(kind == 2 ? value == "T" || value == "F" : plain_number(value)))
                        bad("has " + keyword + " = " + value.substr(0, 40) + ", not " + (kind == 2 ? "T or F" : "a number") +
                            (value.size() > 28 ? " of at most 28 characters" : ""));
                }
            }
            if (card[0] == 'Z' && card[8] == '=') {
                std::string keyword(card, 8);
                keyword.erase(keyword.find_last_not_of(' ') + 1);
                z.emplace(keyword, std::string(card + 9, 71));
            }
        }
        const auto any_card = [&](const std::string& keyword, const auto& test) {
            const auto [first, last] = z.equal_range(keyword);
            return std::any_of(first, last, [&](const auto& card) { return test(card.second); });
        };
        // Whether every card of `keyword` holds a number for which `test` holds (false where there is none).
        const auto every_number = [&](const std::string& keyword, const auto& test) {
            const auto [first, last] = z.equal_range(keyword);
            return first != last && std::all_of(first, last, [&](const auto& card) {
                       char* stop = nullptr;
                       const double v = std::strtod(card.second.c_str(), &stop);
                       return stop != card.second.c_str() && test(v);
                   });
        };
        if (any_card("ZIMAGE", [](const std::string& v) { return v.find('T') != std::string::npos; })) {
            const auto at_least_one = [](double v) { return v >= 1; };
            if (!every_number("ZNAXIS", [](double v) { return v >= 1 && v <= MAX_COMPRESS_DIM; }))
                bad("gives a compressed image ZNAXIS that is not 1 to 6");
            for (int d = 1; d <= MAX_COMPRESS_DIM; ++d) {  // cfitsio reads at most ZNAXIS (1 to 6) of each
                const std::string n = std::to_string(d);
                if (z.count("ZNAXIS" + n) && !every_number("ZNAXIS" + n, at_least_one))
                    bad("gives a compressed image ZNAXIS" + n + " below 1");
                if (z.count("ZTILE" + n) && !every_number("ZTILE" + n, at_least_one))
                    bad("gives a compressed image ZTILE" + n + " below 1");
            }
            // Rice under either of cfitsio's names, in any case (it compares them without case).
            const auto rice = [](std::string v) {
                for (char& c : v) c = char(std::toupper(static_cast<unsigned char>(c)));
                return v.find("RICE_1") != std::string::npos || v.find("RICE_ONE") != std::string::npos;
            };
            if (any_card("ZCMPTYPE", rice) &&
                z.count("ZVAL1") && !every_number("ZVAL1", [](double v) { return !(v > -1 && v < 1); }))
                bad("gives Rice blocks of 0 pixels (ZVAL1 = 0)");
        }
        std::uint64_t k = 0;
        // The integer value of mandatory card `keyword`, the next one.
        const auto integer = [&](const std::string& keyword, long long lo, long long hi) {
            const char* card = card_at(k++);
            std::string key = keyword;
            key.resize(8, ' ');
            if (!card || std::memcmp(card, key.data(), 8) != 0 || card[8] != '=')
                bad("lacks " + keyword + " as card " + std::to_string(k) + " (the standard's order of mandatory cards)");
            std::size_t i = 9;
            while (i < card_bytes && card[i] == ' ') ++i;
            const std::size_t first = i;
            if (i < card_bytes && (card[i] == '-' || card[i] == '+')) ++i;
            long long v = 0;
            std::size_t digits = 0;
            for (; i < card_bytes && card[i] >= '0' && card[i] <= '9'; ++i, ++digits)
                v = v >= (1LL << 58) ? 1LL << 62 : v * 10 + (card[i] - '0');  // saturates, never overflows
            while (i < card_bytes && card[i] == ' ') ++i;
            if (digits == 0 || (i < card_bytes && card[i] != '/'))
                bad("has " + keyword + " = " + std::string(card + first, card + std::min(card_bytes, first + 20)) + ", not an integer");
            if (card[first] == '-') v = -v;
            if (v < lo || v > hi) bad("has " + keyword + " = " + std::to_string(v) + ", not " + std::to_string(lo) + " to " + std::to_string(hi));
            return v;
        };
        const char* first = card_at(k++);
        const bool primary = offset == 0;
        if (!first || std::memcmp(first, primary ? "SIMPLE  =" : "XTENSION=", 9) != 0)
            bad(std::string("does not begin with ") + (primary ? "SIMPLE" : "XTENSION"));
        const bool table = !primary && std::string(first + 9, 71).find("BINTABLE") != std::string::npos;
        integer("BITPIX", -64, 64);
        const long long naxis = integer("NAXIS", 0, 999);
        for (long long n = 1; n <= naxis; ++n) integer("NAXIS" + std::to_string(n), 0, LLONG_MAX >> 2);
        if (primary) return;
        integer("PCOUNT", 0, LLONG_MAX >> 2);
        integer("GCOUNT", 0, 1 << 30);
        if (table) integer("TFIELDS", 0, 999);
    }

    // 1: a keyword cfitsio reads as a number while it opens an image or a tile table, 2: as a logical, 0: neither.
    static int numeric_key(const std::string& k) {
        for (const char* logical : {"SIMPLE", "EXTEND", "GROUPS", "ZIMAGE", "ZSIMPLE", "ZEXTEND"})
            if (k == logical) return 2;
        for (const char* number : {"BITPIX", "NAXIS", "PCOUNT", "GCOUNT", "TFIELDS", "BSCALE", "BZERO", "BLANK", "THEAP", "EXTVER",
                                   "EXTLEVEL", "ZNAXIS", "ZBITPIX", "ZPCOUNT", "ZGCOUNT", "ZDITHER0", "ZBLANK", "ZSCALE", "ZZERO", "ZTHEAP"})
            if (k == number) return 1;
        for (const char* numbered : {"NAXIS", "TNULL", "TSCAL", "TZERO", "TBCOL", "ZNAXIS", "ZTILE", "ZVAL"}) {
            const std::size_t n = std::strlen(numbered);
            if (k.size() > n && k.compare(0, n, numbered) == 0 &&
                std::all_of(k.begin() + std::ptrdiff_t(n), k.end(), [](char c) { return c >= '0' && c <= '9'; }))
                return 1;
        }
        return 0;
    }

    // An integer or a real as FITS writes them ([+-]digits[.digits][E|D[+-]digits]), of at most 28 characters.
    static bool plain_number(const std::string& v) {
        if (v.empty() || v.size() > 28) return false;
        std::size_t i = 0, digits = 0;
        if (v[i] == '+' || v[i] == '-') ++i;
        for (; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])); ++i) ++digits;
        if (i < v.size() && v[i] == '.')
            for (++i; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])); ++i) ++digits;
        if (digits == 0) return false;
        if (i < v.size() && (v[i] == 'E' || v[i] == 'e' || v[i] == 'D' || v[i] == 'd')) {
            ++i;
            if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
            std::size_t exponent = 0;
            for (; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])); ++i) ++exponent;
            if (exponent == 0) return false;
        }
        return i == v.size();
    }

    // cfitsio over `bytes` (the whole file, or its headers), on the image's HDU, and the layout read there.
    void open(Bytes bytes) {
        file_.reset();
        check_header_text(bytes, 0, "the primary header");
        file_ = std::make_unique<FitsMemory>(bytes, name_);
        fitsfile* f = file_->get();
        int status = 0, bitpix = 0, naxis = 0;
        long long axes[most_axes] = {};
        if (fits_get_img_paramll(f, most_axes, &bitpix, &naxis, axes, &status)) bad_fits(name_, "the primary header", status);
        layout_ = FitsLayout{};
        if (primary_is_empty(f)) {
            const std::string primary = naxis == 0 ? "NAXIS 0" : axes_text(naxis, axes);
            long long head = 0, data = 0, end = 0;
            if (fits_get_hduaddrll(f, &head, &data, &end, &status)) bad_fits(name_, "the primary header", status);
            check_header_text(bytes, std::uint64_t(std::max(end, 0LL)), "the first extension's header");
            int type = 0;
            if (fits_movabs_hdu(f, 2, &type, &status)) {
                if (status == END_OF_FILE)
                    fail(name_, "the FITS file holds no image: its primary HDU has no data (" + primary + ") and no extension follows");
                bad_fits(name_, "the first extension's header", status);
            }
            if (type != IMAGE_HDU)
                fail(name_, "the FITS file holds no image: its primary HDU has no data (" + primary + ") and its first extension is " +
                                (type == BINARY_TBL ? "a binary table" : "an ASCII table") +
                                " (apron reads the image of the primary HDU, or of the first extension when the primary HDU is empty)");
            layout_.hdu = 2;
            if (fits_get_img_paramll(f, most_axes, &bitpix, &naxis, axes, &status)) bad_fits(name_, "the first extension's header", status);
            if (naxis == 0 || std::any_of(axes, axes + std::min(naxis, most_axes), [](long long n) { return n == 0; }))
                fail(name_, "the FITS file holds no image: neither its primary HDU nor its first extension has data");
        }
        const std::string where = layout_.hdu == 1 ? "" : " (in the first extension)";
        if (naxis == 1)
            fail(name_, "a one-dimensional FITS array of " + std::to_string(axes[0]) + " values (NAXIS 1)" + where +
                            "; apron reads images (NAXIS 2) and cubes of planes (NAXIS 3)");
        if (naxis > 3)
            fail(name_, "a FITS array of NAXIS " + std::to_string(naxis) + " (" + axes_text(naxis, axes) + ")" + where +
                            "; apron reads images (NAXIS 2) and cubes of planes (NAXIS 3)");
        if (std::any_of(axes, axes + naxis, [](long long n) { return n < 0; })) fail(name_, "bad FITS file: a negative NAXISn");
        layout_.naxis = naxis;
        layout_.width = std::uint64_t(axes[0]);
        layout_.height = std::uint64_t(axes[1]);
        layout_.planes = naxis == 3 ? std::uint64_t(axes[2]) : 1;
        if (layout_.planes > std::uint64_t(INT_MAX))
            fail(name_, "a FITS cube of " + std::to_string(layout_.planes) + " planes, more than apron counts (" + std::to_string(INT_MAX) + ")");
        layout_.stored = sample_kind(bitpix, key_or(f, "BSCALE", 1, name_), key_or(f, "BZERO", 0, name_), name_);
        layout_.type = layout_.stored == Stored::u8 ? PixelType::u8 : layout_.stored == Stored::u16 ? PixelType::u16 : PixelType::f32;
        layout_.compressed = fits_is_compressed_image(f, &status) != 0;
        if (status) bad_fits(name_, "the image's header", status);
        long long head = 0, data = 0, end = 0;
        if (fits_get_hduaddrll(f, &head, &data, &end, &status)) bad_fits(name_, "the image's header", status);
        layout_.data_offset = std::uint64_t(data);
        if (layout_.compressed) check_tiling(f);
        read_cards(f);
    }

    // cfitsio decodes the tiles of a compressed image without bounding every decoder by the bytes it was
    // given: HCOMPRESS and PLIO decoders are not even given their length, and a damaged Rice stream makes
    // the Rice decoder read past its end (a crash, found by fuzz_fits). What can be told from the header is
    // checked here, as cfitsio read it (its FITSfile, which fitsio.h makes public): the algorithm (Rice, GZIP
    // or none; HCOMPRESS and PLIO refused by name), tiles within the image, the Rice parameters, and the
    // dithering seed of quantized floats (an index into cfitsio's table of random numbers). Each tile is
    // checked before any is decoded (check_tiles).
    void check_tiling(fitsfile* f) {
        const FITSfile& c = *f->Fptr;
        switch (c.compress_type) {
        case RICE_1:
        case GZIP_1:
        case GZIP_2:
        case NOCOMPRESS: break;
        case HCOMPRESS_1:
        case PLIO_1:
            fail(name_, std::string("a FITS image tile-compressed with ") + (c.compress_type == PLIO_1 ? "PLIO_1" : "HCOMPRESS_1") +
                            ", which apron does not read: cfitsio's decoder for it is not bounded by the data it is given, so a "
                            "damaged file could crash it (apron reads RICE_1 and GZIP; decompress it first, e.g. with funpack)");
        default:
            fail(name_, "a FITS image tile-compressed with an algorithm apron does not read (cfitsio's code " +
                            std::to_string(c.compress_type) + "; apron reads RICE_1 and GZIP)");
        }
        // cfitsio 4.2 can report the extension opened with the compressed image's parameters read only in part
        // (found by fuzz_fits: its tile table of another row count than its tiles): it then decodes tiles
        // from column 0 with a length it never read. The parameters must be whole, and the rows the tiles.
        if (c.cn_compressed < 1 || c.maxtilelen < 1 || c.maxelem < 1 || c.zndim < 1 || c.zndim > MAX_COMPRESS_DIM)
            fail(name_, "bad FITS file: the compressed image's parameters are incomplete (no COMPRESSED_DATA column, tile "
                        "size or compressed size)");
        if (c.zndim != layout_.naxis) fail(name_, "bad FITS file: ZNAXIS " + std::to_string(c.zndim) + " for an image of NAXIS " + std::to_string(layout_.naxis));
        std::uint64_t pixels = 1;
        for (int d = 0; d < c.zndim; ++d) {
            if (c.tilesize[d] < 1 || c.tilesize[d] > c.znaxis[d])
                fail(name_, "bad FITS file: ZTILE" + std::to_string(d + 1) + " = " + std::to_string(c.tilesize[d]) +
                                " is not a tile side within the image (ZNAXIS" + std::to_string(d + 1) + " = " +
                                std::to_string(c.znaxis[d]) + ")");
            pixels = saturating_product(pixels, std::uint64_t(c.tilesize[d]));
        }
        // The tile table and its heap must lie in the file: cfitsio 4.2 reads a descriptor past the end of the
        // bytes it was given (found by fuzz_fits: a table whose rows begin where the file ends).
        const std::uint64_t table_bytes = saturating_product(std::uint64_t(std::max(c.rowlength, 0LL)), std::uint64_t(std::max(c.numrows, 0LL)));
        const std::uint64_t heap_end = std::max<std::uint64_t>(std::uint64_t(std::max(c.heapstart, 0LL)), table_bytes) +
                                       std::uint64_t(std::max(c.heapsize, 0LL));
        const std::uint64_t data_start = std::uint64_t(std::max(c.datastart, 0LL));
        if (c.datastart < 0 || c.heapstart < 0 || c.heapsize < 0 || data_start > source_.size() || heap_end > source_.size() - data_start)
            fail(name_, "truncated FITS file: the compressed image's tile table and heap (" + std::to_string(heap_end) + " bytes from byte " +
                            std::to_string(data_start) + ") end past the file's " + std::to_string(source_.size()) + " bytes");
        long long tiles = 1;
        for (int d = 0; d < c.zndim; ++d) tiles *= (c.znaxis[d] - 1) / c.tilesize[d] + 1;
        if (tiles != c.numrows)
            fail(name_, "bad FITS file: the compressed image has " + std::to_string(tiles) + " tiles and its table " +
                            std::to_string(c.numrows) + " rows");
        layout_.tile_pixels = pixels;
        layout_.tile_height = std::uint64_t(c.tilesize[1]);
        if (c.compress_type == RICE_1 && c.rice_blocksize < 1)
            fail(name_, "bad FITS file: a Rice block of " + std::to_string(c.rice_blocksize) + " pixels");
        if (c.zbitpix < 0 && (c.dither_seed < 1 || c.dither_seed > 10000))
            fail(name_, "bad FITS file: ZDITHER0 = " + std::to_string(c.dither_seed) + " is not 1 to 10000");
    }

    // Every tile's stored bytes must lie in the table's heap, within the file, before cfitsio allocates a
    // buffer of the size a descriptor claims. Every Rice tile's stream is walked as the decoder will read
    // it: the first pixel as stored, then per block of rice_blocksize pixels a code of 3, 4 or 5 bits (8-,
    // 16-, 32-bit pixels), and per pixel nothing (code 0), its raw bits (the largest code), or a unary count
    // ended by a one and then code - 1 more bits; a stream that ends before its tile's pixels is refused
    // before cfitsio reads past it. Every gzip tile is inflated once here, into a small buffer: cfitsio
    // grows its output for as long as inflate asks, so a tile that inflates beyond its pixels (a bomb) or
    // whose stream is cut short (cfitsio would grow its buffer forever, waiting for input) is refused.
    // Only the tiles of plane `plane` (a cube's tiles may hold several planes), once each.
    void check_tiles(fitsfile* f, int plane) {
        const FITSfile& c = *f->Fptr;
        const std::uint64_t file_end = (source_.size() + fits_block - 1) / fits_block * fits_block;  // padded as read
        const int bytes = c.rice_bytepix == 1 ? 1 : c.rice_bytepix == 2 ? 2 : 4;  // cfitsio's choice of Rice decoder
        const int code_bits = bytes == 1 ? 3 : bytes == 2 ? 4 : 5;
        const unsigned raw_code = bytes == 1 ? 7 : bytes == 2 ? 15 : 26;  // the code of raw pixels
        struct Column {
            int number;
            std::uint64_t element_bytes;
        };
        std::vector<Column> columns;
        for (const int number : {c.cn_compressed, c.cn_gzip_data, c.cn_uncompressed}) {
            if (number <= 0) continue;
            int type = 0, status = 0;
            long repeat = 0, width = 0;
            if (fits_get_coltype(f, number, &type, &repeat, &width, &status)) bad_fits(name_, "the tile table's columns", status);
            // cfitsio 4.2 reads a tile's length from its column's descriptor and, where that read fails (a column
            // of fixed width), goes on with the length unset.
            if (type >= 0) fail(name_, "bad FITS file: a tile column (" + std::to_string(number) + ") is not of variable length");
            columns.push_back({number, std::uint64_t(std::clamp<long>(width, 1, 16))});
        }
        long long counts[MAX_COMPRESS_DIM] = {}, index[MAX_COMPRESS_DIM] = {};
        for (int d = 0; d < c.zndim; ++d) counts[d] = (c.znaxis[d] - 1) / c.tilesize[d] + 1;
        Buffer stream;
        long long rows = 1;
        for (int d = 0; d < c.zndim; ++d) rows *= counts[d];
        checked_.resize(std::size_t(rows), false);
        for (long long row = 1;; ++row) {
            std::uint64_t pixels = 1;
            for (int d = 0; d < c.zndim; ++d)
                pixels *= std::uint64_t(std::min<long long>(c.tilesize[d], c.znaxis[d] - index[d] * c.tilesize[d]));
            const bool in_plane = c.zndim < 3 || (index[2] * c.tilesize[2] <= plane && plane < (index[2] + 1) * c.tilesize[2]);
            for (const Column& column : columns) {
                if (!in_plane || checked_[std::size_t(row - 1)]) break;
                long long length = 0, heap = 0;
                int status = 0;
                if (fits_read_descriptll(f, column.number, row, &length, &heap, &status))
                    bad_fits(name_, "tile " + std::to_string(row) + "'s descriptor", status);
                const std::uint64_t stored = saturating_product(std::uint64_t(std::max(length, 0LL)), column.element_bytes);
                const std::uint64_t at = std::uint64_t(std::max(c.datastart, 0LL)) + std::uint64_t(std::max(c.heapstart, 0LL)) +
                                         std::uint64_t(std::max(heap, 0LL));
                if (length < 0 || heap < 0 || length > INT_MAX || stored > std::uint64_t(std::max(c.heapsize, 0LL)) ||
                    std::uint64_t(heap) > std::uint64_t(std::max(c.heapsize, 0LL)) - stored || at > file_end || stored > file_end - at)
                    fail(name_, "bad FITS file: tile " + std::to_string(row) + " claims " + std::to_string(length) + " values at byte " +
                                    std::to_string(heap) + " of a heap of " + std::to_string(c.heapsize) + " bytes in a file of " +
                                    std::to_string(source_.size()));
                const bool gzip = column.number == c.cn_gzip_data ||
                                  (column.number == c.cn_compressed && (c.compress_type == GZIP_1 || c.compress_type == GZIP_2));
                const bool rice = column.number == c.cn_compressed && c.compress_type == RICE_1;
                if (length == 0 || (!gzip && !rice)) continue;
                stream.resize(std::size_t(length));
                if (fits_read_col(f, TBYTE, column.number, row, 1, length, nullptr, stream.data(), nullptr, &status))
                    bad_fits(name_, "tile " + std::to_string(row), status);
                if (rice && !rice_stream_holds(stream, pixels, bytes, code_bits, raw_code, std::uint64_t(8 * bytes),
                                               std::uint64_t(c.rice_blocksize)))
                    fail(name_, "bad FITS file: Rice-compressed tile " + std::to_string(row) + " (" + std::to_string(length) +
                                    " bytes) ends before its " + std::to_string(pixels) + " pixels");
                if (gzip && !gzip_stream_holds(stream, saturating_product(pixels, 8)))
                    fail(name_, "bad FITS file: gzip-compressed tile " + std::to_string(row) + " (" + std::to_string(length) +
                                    " bytes) is damaged, cut short, or inflates beyond its " + std::to_string(pixels) + " pixels");
            }
            if (in_plane) checked_[std::size_t(row - 1)] = true;
            int d = 0;
            for (; d < c.zndim && ++index[d] == counts[d]; ++d) index[d] = 0;
            if (d == c.zndim) break;
        }
    }

    // Whether a gzip stream ends within its bytes, having inflated to at most `limit` bytes.
    static bool gzip_stream_holds(const Buffer& in, std::uint64_t limit) {
        z_stream z{};
        if (inflateInit2(&z, 15 + 16) != Z_OK) return false;
        std::vector<unsigned char> out(std::size_t(1) << 16);
        z.next_in = const_cast<Bytef*>(in.data());
        z.avail_in = uInt(in.size());
        bool ends = false;
        for (;;) {
            z.next_out = out.data();
            z.avail_out = uInt(out.size());
            const int err = inflate(&z, Z_NO_FLUSH);
            if (z.total_out > limit) break;
            if (err == Z_STREAM_END) {
                ends = true;
                break;
            }
            if (err != Z_OK) break;  // Z_BUF_ERROR with room to write: the input ended first; others: damaged
        }
        inflateEnd(&z);
        return ends;
    }

    static bool rice_stream_holds(const Buffer& c, std::uint64_t pixels, int bytes, int code_bits, unsigned raw_code,
                                  std::uint64_t raw_bits, std::uint64_t block) {
        const std::uint64_t end = std::uint64_t(c.size()) * 8;
        std::uint64_t at = std::uint64_t(bytes) * 8;  // after the first pixel, stored as it is
        if (c.size() < std::size_t(bytes) + 1) return false;  // the decoder loads the byte after it at once
        const auto bit = [&](std::uint64_t p) { return (c[std::size_t(p >> 3)] >> (7 - (p & 7))) & 1u; };
        for (std::uint64_t i = 0; i < pixels;) {
            if (end - at < std::uint64_t(code_bits)) return false;
            unsigned code = 0;
            for (int k = 0; k < code_bits; ++k) code = code << 1 | bit(at++);
            const std::uint64_t n = std::min(block, pixels - i);
            i += n;
            if (code == 0) continue;  // every difference zero: no bits
            if (code == raw_code) {   // raw pixels (the 32-bit codes above it are Rice codes of code - 1 bits)
                if ((end - at) / raw_bits < n) return false;
                at += n * raw_bits;
                continue;
            }
            const std::uint64_t low_bits = code - 1;
            for (std::uint64_t k = 0; k < n; ++k) {
                while (true) {  // the unary part, ended by a one
                    if (at >= end) return false;
                    if (bit(at++)) break;
                }
                if (end - at < low_bits) return false;
                at += low_bits;
            }
        }
        return true;
    }

    // The header's cards as text (a compressed image's as the image header it stands for), less the
    // structural ones and blank cards.
    void read_cards(fitsfile* f) {
        cards_.clear();
        char* text = nullptr;
        int count = 0, status = 0;
        if (fits_convert_hdr2str(f, 0, nullptr, 0, &text, &count, &status)) {
            int freed = 0;  // cfitsio's calls do nothing while the status they are given holds an error
            if (text) fits_free_memory(text, &freed);
            bad_fits(name_, "the header's cards", status);
        }
        const std::unique_ptr<char, void (*)(char*)> owned(text, [](char* p) {
            int s = 0;
            fits_free_memory(p, &s);
        });
        const std::size_t length = std::strlen(text);
        for (std::size_t at = 0; at < length; at += card_bytes) {
            std::string card(text + at, std::min(card_bytes, length - at));
            while (!card.empty() && card.back() == ' ') card.pop_back();
            if (card.empty() || is_structural_fits_card(card)) continue;
            const std::vector<std::string>& own = cfitsio_own_cards();
            if (std::find(own.begin(), own.end(), card) != own.end()) continue;
            cards_.push_back(std::move(card));
        }
    }

    // A tile-compressed image from a file read on demand: cfitsio decompresses it from the whole file.
    void load_whole() {
        Buffer all;
        try {
            all.resize(source_.size());
        } catch (const std::bad_alloc&) {
            fail(name_, "out of host memory for the file (" + format_bytes(source_.size()) + ")");
        }
        if (source_.read(0, all.data(), all.size()) != all.size()) fail(name_, "cannot read the file whole: it is truncated or unreadable");
        bytes_ = std::move(all);
        whole_ = true;
        const FitsLayout before = layout_;
        open(Bytes(bytes_));
        if (layout_.width != before.width || layout_.height != before.height || layout_.planes != before.planes ||
            layout_.type != before.type)
            fail(name_, "the file changed while it was read");
    }

    void read_through_cfitsio(int plane, int y0, ImageView out) {
        if (layout_.compressed && !planes_checked_.count(plane)) {
            check_tiles(file_->get(), plane);
            planes_checked_.insert(plane);
        }
        const int datatype = out.type() == PixelType::u8 ? TBYTE : out.type() == PixelType::u16 ? TUSHORT : TFLOAT;
        const std::size_t row_bytes = out.shape.row_bytes();
        const bool contiguous = out.pitch == row_bytes;
        const int rows = contiguous ? out.height() : int(std::min<std::uint64_t>(layout_.chunk_rows(), std::uint64_t(out.height())));
        Buffer chunk(contiguous ? 0 : row_bytes * std::size_t(rows));
        for (int r = 0; r < out.height(); r += rows) {
            const int n = std::min(rows, out.height() - r);
            long long first[3] = {1, y0 + r + 1, plane + 1};
            void* dst = contiguous ? static_cast<void*>(out.row_bytes(r)) : chunk.data();
            int status = 0;
            if (fits_read_pixll(file_->get(), datatype, first, static_cast<long long>(n) * out.width(), nullptr, dst, nullptr, &status))
                bad_fits(name_, (n > 1 ? "rows " + std::to_string(y0 + r) + "-" + std::to_string(y0 + r + n - 1) : "row " + std::to_string(y0 + r)) +
                                    (layout_.planes > 1 ? " of plane " + std::to_string(plane) : ""),
                         status);
            if (!contiguous)
                for (int k = 0; k < n; ++k) std::memcpy(out.row_bytes(r + k), chunk.data() + std::size_t(k) * row_bytes, row_bytes);
        }
    }

    // Samples at fixed offsets, big-endian: straight into the rows (signed samples land at the start of each
    // f32 row, then widen in place from its end, so none is overwritten before it is read). `out` may run on
    // past the plane's last row into the next planes' rows (read_volume).
    void read_stored_rows(int plane, int y0, ImageView out, int threads) {
        FixedRows r;
        r.data_offset = layout_.data_offset + std::uint64_t(plane) * layout_.plane_bytes();
        r.byte_order = ByteOrder::big;
        r.offset_binary = layout_.stored == Stored::u16;
        const bool widen = layout_.stored == Stored::i8 || layout_.stored == Stored::i16;
        r.shape = ImageShape{int(layout_.width), int(layout_.height), 1,
                             layout_.stored == Stored::i8 ? PixelType::u8 : layout_.stored == Stored::i16 ? PixelType::u16 : out.type()};
        const ImageView into{out.data, ImageShape{out.width(), out.height(), 1, r.shape.type}, out.pitch, out.memory};
        read_fixed_rows(source_, name_, r, y0, into, threads);
        if (!widen) return;
        for (int y = 0; y < out.height(); ++y) {
            auto* row = reinterpret_cast<std::uint8_t*>(out.row_bytes(y));
            for (std::size_t i = std::size_t(out.width()); i-- > 0;) {
                float v;
                if (layout_.stored == Stored::i8) {
                    v = float(int(row[i]) - 128);
                } else {
                    std::int16_t s;
                    std::memcpy(&s, row + 2 * i, 2);
                    v = float(s);
                }
                std::memcpy(row + 4 * i, &v, 4);
            }
        }
    }

    const ByteSource& source_;
    std::string name_;
    Buffer bytes_;        // the headers of a file read on demand, or the whole file once loaded
    bool whole_ = false;  // cfitsio has the whole file (in memory from the start, or loaded)
    // A compressed image's planes whose tiles were checked (before the first read of each), and the tiles.
    std::set<int> planes_checked_;
    std::vector<bool> checked_;
    std::unique_ptr<FitsMemory> file_;
    FitsLayout layout_;
    std::vector<std::string> cards_;
};

Image decode_plane(FitsReader& reader, int plane, const std::string& name, const ReadOptions& options, std::uint64_t pages_bytes,
                   int threads) {
    const ImageShape shape = reader.shape(options, pages_bytes);
    reader.check_complete();
    Held held = reader.held();
    held.pages_bytes = pages_bytes;
    Image img = allocate_image(name, std::uint64_t(shape.width), std::uint64_t(shape.height), 1, shape.type, options, held);
    reader.read_rows(plane, 0, img.view(), threads);
    return img;
}

}  // namespace

Image decode_fits(Bytes bytes, const std::string& name, const ReadOptions& options) {
    return decode_fits(MemorySource(bytes), name, options);
}

Image decode_fits(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    FitsReader reader(source, name);
    const int plane = reader.plane_for(options.page);
    return decode_plane(reader, plane, name, options, 0, io_threads_for_whole_images());
}

std::vector<Image> decode_fits_pages(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    FitsReader reader(source, name);
    reader.shape(options);  // the size refused before any plane is read
    reader.check_complete();
    std::vector<Image> pages;
    std::uint64_t held_pages = 0;  // the planes decoded so far stay held with the next one
    for (int p = 0; p < reader.planes(); ++p) {
        Image img = decode_plane(reader, p, name, options, held_pages, io_threads_for_whole_images());
        held_pages += image_bytes(std::uint64_t(img.width()), std::uint64_t(img.height()), 1, img.type());
        pages.push_back(std::move(img));
    }
    return pages;
}

Image decode_fits_volume(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    FitsReader reader(source, name);
    if (reader.layout().planes > std::uint64_t(INT_MAX))
        fail(name, "a FITS cube of " + std::to_string(reader.layout().planes) + " planes: a volume holds at most " +
                       std::to_string(INT_MAX));
    ImageShape shape = reader.shape(options);  // each plane's limits, as read_image checks them
    shape.depth = reader.planes();
    check_volume(name, shape, options, reader.held());
    reader.check_complete();  // a truncated cube is refused before its volume is allocated
    Image volume = allocate_volume(name, shape, options);
    reader.read_volume(volume.view(), io_threads_for_whole_images());
    return volume;
}

ImageShape probe_fits(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    FitsReader reader(source, name);
    reader.plane_for(options.page);
    return reader.shape(options);
}

std::vector<ImageShape> probe_fits_pages(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    FitsReader reader(source, name);
    return std::vector<ImageShape>(std::size_t(reader.planes()), reader.shape(options));
}

int count_fits_pages(const ByteSource& source, const std::string& name, const ReadOptions&) {
    return FitsReader(source, name).planes();
}

ImageMetadata metadata_fits(const ByteSource& source, const std::string& name, const ReadOptions&) {
    return FitsReader(source, name).metadata();
}

namespace {

class FitsRows final : public RowSource {
public:
    FitsRows(std::unique_ptr<ByteSource> file, const std::string& name, const ReadOptions& options, int threads)
        : file_(std::move(file)), name_(name), reader_(*file_, name_), threads_(threads) {
        plane_ = reader_.plane_for(options.page);
        shape_ = reader_.shape(options);
        reader_.check_complete();
    }
    bool compressed() const { return reader_.layout().compressed; }
    const ImageShape& shape() const override { return shape_; }
    const std::string& path() const override { return name_; }
    std::uint64_t buffer_bytes() const override { return 0; }
    void read_rows(int y0, ImageView band) override {
        if (y0 < 0 || band.height() > shape_.height - y0) fail(name_, "rows " + std::to_string(y0) + "+ are outside the image");
        reader_.read_rows(plane_, y0, band, threads_);
    }

private:
    std::unique_ptr<ByteSource> file_;
    std::string name_;
    FitsReader reader_;
    int threads_ = 1, plane_ = 0;
    ImageShape shape_;
};

}  // namespace

std::unique_ptr<RowSource> open_fits_rows(std::unique_ptr<ByteSource> file, const std::string& name, const ReadOptions& options,
                                          int threads) {
    auto rows = std::make_unique<FitsRows>(std::move(file), name, options, threads);
    if (rows->compressed()) return nullptr;
    return rows;
}

namespace {

// cfitsio grows the file it writes in memory through a realloc-like callback without a context pointer:
// the buffer being written is this thread's.
thread_local Buffer* growing = nullptr;

void* grow_buffer(void* p, std::size_t n) {
    if (!growing || p != static_cast<void*>(growing->data())) return nullptr;
    try {
        growing->resize(std::max<std::size_t>(n, 1));
    } catch (...) {
        return nullptr;  // cfitsio reports a memory error; no exception may cross its C frames
    }
    return growing->data();
}

class FitsWriter {
public:
    FitsWriter(Buffer& out, const std::string& name) : out_(out), name_(name) {
        growing = &out_;
        data_ = out_.data();
        size_ = out_.size();
        int status = 0;
        if (fits_create_memfile(&f_, &data_, &size_, 0, grow_buffer, &status)) {
            f_ = nullptr;
            failed("cannot create the file", status);
        }
    }
    ~FitsWriter() {
        int status = 0;
        if (f_) fits_close_file(f_, &status);
        growing = nullptr;
    }
    FitsWriter(const FitsWriter&) = delete;
    FitsWriter& operator=(const FitsWriter&) = delete;

    fitsfile* get() const { return f_; }
    [[noreturn]] void failed(const std::string& what, int status) const {
        fail(name_, "cannot encode FITS: " + what + " (cfitsio: " + cfitsio_text(status) + ")");
    }
    // Closes the file; the buffer then holds exactly its bytes.
    void finish() {
        int status = 0;
        long long head = 0, data = 0, end = 0;
        if (fits_get_hduaddrll(f_, &head, &data, &end, &status)) failed("the data unit", status);
        if (fits_close_file(f_, &status)) failed("closing", status);
        f_ = nullptr;
        growing = nullptr;
        out_.resize(std::size_t(end));
    }

private:
    Buffer& out_;
    std::string name_;
    void* data_ = nullptr;
    std::size_t size_ = 0;
    fitsfile* f_ = nullptr;
};

}  // namespace

Buffer encode_fits_pages(std::span<const ConstImageView> pages, const ImageMetadata& metadata, const std::string& name,
                         const WriteOptions&) {
    if (pages.empty()) fail(name, "no pages to write");
    const ImageShape& shape = pages[0].shape;
    if (shape.channels != 1)
        fail(name, "cannot write a " + std::to_string(shape.channels) +
                       "-channel image as FITS: apron writes FITS images of one channel (a cube's planes are pages, not "
                       "channels); write colour images as .tif or .png");
    for (std::size_t p = 1; p < pages.size(); ++p)
        if (!(pages[p].shape == shape))
            fail(name, "a FITS cube holds planes of one size and type, and page " + std::to_string(p) + " is " +
                           std::to_string(pages[p].width()) + "x" + std::to_string(pages[p].height()) + " " + to_string(pages[p].type()) +
                           (pages[p].channels() > 1 ? " with " + std::to_string(pages[p].channels()) + " channels" : "") + " where page 0 is " +
                           std::to_string(shape.width) + "x" + std::to_string(shape.height) + " " + to_string(shape.type) +
                           " (write .tif to keep pages of different shapes)");
    const int bitpix = shape.type == PixelType::u8 ? BYTE_IMG : shape.type == PixelType::u16 ? USHORT_IMG : FLOAT_IMG;
    const int datatype = shape.type == PixelType::u8 ? TBYTE : shape.type == PixelType::u16 ? TUSHORT : TFLOAT;
    const std::size_t row_bytes = shape.row_bytes();
    // The whole file at once (cfitsio grows it if the header takes more): the structural cards, the carried
    // ones, END, and the samples, each part padded to whole blocks.
    const auto blocks = [](std::uint64_t bytes) { return (bytes + fits_block - 1) / fits_block * fits_block; };
    Buffer out;
    out.resize(std::size_t(blocks((16 + metadata.fits_cards.size()) * card_bytes) + blocks(std::uint64_t(row_bytes) * shape.height * pages.size())));
    FitsWriter w(out, name);
    int status = 0;
    long long axes[3] = {shape.width, shape.height, static_cast<long long>(pages.size())};
    if (fits_create_imgll(w.get(), bitpix, pages.size() > 1 ? 3 : 2, axes, &status)) w.failed("the image header", status);
    // cfitsio's own commentary cards (its COMMENT on the FITS standard), which a FITS input written by cfitsio
    // carries too: written once, not once more with every round trip.
    std::vector<std::string> own;
    int keys = 0;
    if (fits_get_hdrspace(w.get(), &keys, nullptr, &status)) w.failed("the image header", status);
    for (int k = 1; k <= keys; ++k) {
        char card[FLEN_CARD] = {};
        if (fits_read_record(w.get(), k, card, &status)) w.failed("the image header", status);
        std::string text(card);
        while (!text.empty() && text.back() == ' ') text.pop_back();
        own.push_back(std::move(text));
    }
    for (const std::string& card : metadata.fits_cards) {
        if (card.empty() || is_structural_fits_card(card)) continue;
        if (const auto it = std::find(own.begin(), own.end(), card); it != own.end()) {
            own.erase(it);
            continue;
        }
        if (card.size() > card_bytes) fail(name, "cannot write the FITS card '" + card + "': it is longer than 80 columns");
        if (fits_write_record(w.get(), card.c_str(), &status))
            fail(name, "cannot write the FITS card '" + card + "' (cfitsio: " + cfitsio_text(status) + ")");
    }
    // cfitsio byte-swaps the floats it is given in place before writing them: it gets a copy of each run of
    // rows (about 1 MiB), never the caller's image.
    const int run_rows = int(std::clamp<std::size_t>((std::size_t(1) << 20) / row_bytes, 1, std::size_t(shape.height)));
    Buffer scratch(row_bytes * std::size_t(run_rows));
    for (std::size_t p = 0; p < pages.size(); ++p) {
        const ConstImageView& page = pages[p];
        for (int y = 0; y < page.height(); y += run_rows) {
            const int n = std::min(run_rows, page.height() - y);
            for (int k = 0; k < n; ++k) std::memcpy(scratch.data() + std::size_t(k) * row_bytes, page.row_bytes(y + k), row_bytes);
            long long first[3] = {1, y + 1, static_cast<long long>(p) + 1};
            if (fits_write_pixll(w.get(), datatype, first, static_cast<long long>(n) * page.width(), scratch.data(), &status))
                w.failed("the samples", status);
        }
    }
    w.finish();
    return out;
}

Buffer encode_fits(ConstImageView image, const std::string& name, const WriteOptions& options) {
    return encode_fits_pages(std::span(&image, 1), options.metadata, name, options);
}

}  // namespace apron::io

#else  // !APRON_HAVE_FITS: dispatch never calls these (can_store refuses FITS), but the linker needs them.

namespace apron::io {

namespace {
[[noreturn]] void not_built(const std::string& name) {
    fail(name, "FITS support is not built in (install libcfitsio-dev and rebuild apron)");
}
}  // namespace

Image decode_fits(Bytes, const std::string& name, const ReadOptions&) { not_built(name); }
Image decode_fits(const ByteSource&, const std::string& name, const ReadOptions&) { not_built(name); }
std::vector<Image> decode_fits_pages(const ByteSource&, const std::string& name, const ReadOptions&) { not_built(name); }
Image decode_fits_volume(const ByteSource&, const std::string& name, const ReadOptions&) { not_built(name); }
ImageShape probe_fits(const ByteSource&, const std::string& name, const ReadOptions&) { not_built(name); }
std::vector<ImageShape> probe_fits_pages(const ByteSource&, const std::string& name, const ReadOptions&) { not_built(name); }
int count_fits_pages(const ByteSource&, const std::string& name, const ReadOptions&) { not_built(name); }
ImageMetadata metadata_fits(const ByteSource&, const std::string& name, const ReadOptions&) { not_built(name); }
std::unique_ptr<RowSource> open_fits_rows(std::unique_ptr<ByteSource>, const std::string& name, const ReadOptions&, int) {
    not_built(name);
}
Buffer encode_fits_pages(std::span<const ConstImageView>, const ImageMetadata&, const std::string& name, const WriteOptions&) {
    not_built(name);
}
Buffer encode_fits(ConstImageView, const std::string& name, const WriteOptions&) { not_built(name); }

}  // namespace apron::io

#endif
