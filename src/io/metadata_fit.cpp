// fit_metadata (include/apron/io.hpp): what of an input's metadata an output can hold, and one line saying
// what it cannot. The CLI's filter, the batch and streamed runs all print this line; the writers place what
// is kept (metadata_places.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "io/exif.hpp"
#include "io/metadata_places.hpp"

namespace apron::io {

bool png_phys(const ImageMetadata& m, PngPhys& out) {
    if (!(m.x_resolution > 0 && m.y_resolution > 0)) return false;
    const double per_metre = m.resolution_unit == ResolutionUnit::inch         ? 1 / 0.0254
                             : m.resolution_unit == ResolutionUnit::centimetre ? 100
                                                                               : 1;
    const double x = std::round(m.x_resolution * per_metre), y = std::round(m.y_resolution * per_metre);
    if (!(x >= 1 && y >= 1 && x <= 2147483647.0 && y <= 2147483647.0)) return false;
    out = {std::uint32_t(x), std::uint32_t(y), m.resolution_unit == ResolutionUnit::none ? 0 : 1};
    return true;
}

bool jpeg_density(const ImageMetadata& m, JpegDensity& out) {
    if (!(m.x_resolution > 0 && m.y_resolution > 0)) return false;
    const auto whole = [](double v) { return v >= 1 && v <= 65535 && std::abs(v - std::round(v)) <= 1e-6 * v; };
    if (!whole(m.x_resolution) || !whole(m.y_resolution)) return false;
    out = {std::uint16_t(std::round(m.x_resolution)), std::uint16_t(std::round(m.y_resolution)),
           std::uint8_t(m.resolution_unit == ResolutionUnit::inch ? 1 : m.resolution_unit == ResolutionUnit::centimetre ? 2 : 0)};
    return true;
}

bool is_ome_xml(const std::string& description) {
    return description.find("<OME") != std::string::npos && description.find("http://www.openmicroscopy.org/Schemas/OME") != std::string::npos;
}

const char* png_keyword_of(std::uint16_t tag) {
    switch (tag) {
    case 305: return "Software";
    case 306: return "Creation Time";
    case 315: return "Author";
    case 33432: return "Copyright";
    default: return nullptr;
    }
}

std::vector<TiffTag> tiff_directory_tags(const ImageMetadata& m) {
    std::vector<TiffTag> tags;
    const auto add = [&](std::uint16_t number, std::uint16_t type, std::uint32_t count, const void* data, std::size_t bytes) {
        const auto* first = static_cast<const std::uint8_t*>(data);
        tags.push_back({number, type, count, std::vector<std::uint8_t>(first, first + bytes)});
    };
    const auto ascii = [&](std::uint16_t number, const std::string& text) {
        add(number, 2, std::uint32_t(text.size() + 1), text.c_str(), text.size() + 1);
    };
    if (!m.description.empty()) ascii(270, m.description);
    if (const int turn = orientation_of(m); turn >= 1 && turn <= 8) {
        const std::uint16_t v = std::uint16_t(turn);
        add(274, 3, 1, &v, 2);
    }
    if (m.x_resolution > 0 && m.y_resolution > 0) {
        // As a fraction with the largest power-of-ten denominator that keeps the numerator in 32 bits.
        const auto rational = [&](std::uint16_t number, double v) {
            std::uint32_t den = 1;
            while (den < 1000000 && v * den * 10 < 4294967295.0 && v * den != std::floor(v * den)) den *= 10;
            const std::uint32_t pair[2] = {std::uint32_t(std::min(std::round(v * den), 4294967295.0)), den};
            add(number, 5, 1, pair, 8);
        };
        rational(282, m.x_resolution);
        rational(283, m.y_resolution);
        const std::uint16_t unit = std::uint16_t(m.resolution_unit);
        add(296, 3, 1, &unit, 2);
    }
    for (const TiffTag& t : m.tiff_tags) {
        if (t.type == 2) ascii(t.number, std::string(t.bytes.begin(), t.bytes.end()));
        else tags.push_back(t);
    }
    if (!m.icc_profile.empty()) add(34675, 7, std::uint32_t(m.icc_profile.size()), m.icc_profile.data(), m.icc_profile.size());
    std::sort(tags.begin(), tags.end(), [](const TiffTag& a, const TiffTag& b) { return a.number < b.number; });
    return tags;
}

std::string fits_keyword(const std::string& card) {
    std::string keyword = card.substr(0, std::min<std::size_t>(card.size(), 8));
    while (!keyword.empty() && keyword.back() == ' ') keyword.pop_back();
    return keyword;
}

bool is_structural_fits_card(const std::string& card) {
    const std::string k = fits_keyword(card);
    for (const char* structural : {"SIMPLE", "XTENSION", "BITPIX", "NAXIS", "EXTEND", "BZERO", "BSCALE", "PCOUNT", "GCOUNT",
                                   "END", "CHECKSUM", "DATASUM"})
        if (k == structural) return true;
    return k.size() > 5 && k.starts_with("NAXIS") &&
           std::all_of(k.begin() + 5, k.end(), [](char c) { return c >= '0' && c <= '9'; });
}

namespace {

const char* tag_name(std::uint16_t tag) {
    switch (tag) {
    case 305: return "Software";
    case 306: return "DateTime";
    case 315: return "Artist";
    case 33432: return "Copyright";
    case 42112: return "GDAL_METADATA (42112)";
    case 42113: return "GDAL_NODATA (42113)";
    default: return nullptr;
    }
}

bool is_geotiff(std::uint16_t tag) {
    return tag == 33550 || tag == 33922 || tag == 34264 || tag == 34735 || tag == 34736 || tag == 34737;
}

std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (std::size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
    return s;
}

std::string resolution_text(const ImageMetadata& m) {
    char b[96];
    std::snprintf(b, sizeof b, "%g x %g pixels per %s", m.x_resolution, m.y_resolution,
                  m.resolution_unit == ResolutionUnit::inch ? "inch" : m.resolution_unit == ResolutionUnit::centimetre ? "cm" : "unit");
    return b;
}

}  // namespace

}  // namespace apron::io

namespace apron {

std::string fit_metadata(ImageMetadata& m, ImageFormat format, const std::string& output, const ImageShape& from,
                         const ImageShape& to, bool streamed) {
    using namespace io;
    std::vector<std::string> lost;
    std::string why;
    // The OME-XML of an OME-TIFF states the pixel type and size of the pixels; left out where they changed.
    if (!m.description.empty() && is_ome_xml(m.description) &&
        (from.type != to.type || from.width != to.width || from.height != to.height || from.channels != to.channels)) {
        m.description.clear();
        lost.push_back(std::string("the OME-XML description (it states the input's ") + to_string(from.type) + " " +
                       std::to_string(from.width) + "x" + std::to_string(from.height) + ", not the output's " +
                       to_string(to.type) + " " + std::to_string(to.width) + "x" + std::to_string(to.height) + ")");
    }
    const char* format_name = format == ImageFormat::pnm    ? "PNM"
                              : format == ImageFormat::pfm  ? "PFM"
                              : format == ImageFormat::png  ? "PNG"
                              : format == ImageFormat::jpeg ? "JPEG"
                              : format == ImageFormat::fits ? "FITS"
                                                            : "TIFF";
    // A streamed run writes metadata into TIFF and PNG as a whole-image run does (the sinks write the
    // directory, the chunks before IDAT); PNM, PFM and raw hold none. JPEG and FITS are never written by
    // rows. FITS holds its own header cards, and none of the rest.
    const bool nothing = (streamed && format != ImageFormat::tiff && format != ImageFormat::png) || format == ImageFormat::pnm ||
                         format == ImageFormat::pfm || format == ImageFormat::fits;
    // A FITS header goes only into a FITS output. Its BLANK card names the stored integer that marks a
    // missing sample: where the output's samples are not the input's integers (another type, or f32, where
    // FITS marks missing samples with NaN) it would mark the wrong ones.
    bool lost_fits = false, lost_blank = false;
    if (!m.fits_cards.empty()) {
        if (format == ImageFormat::fits && !streamed) {
            if (to.type == PixelType::f32 || from.type != to.type) {
                std::string value;
                std::erase_if(m.fits_cards, [&](const std::string& card) {
                    if (fits_keyword(card) != "BLANK") return false;
                    const std::size_t eq = card.find('=');
                    value = eq == std::string::npos ? "" : card.substr(eq + 1, card.find('/', eq) - eq - 1);
                    value.erase(0, value.find_first_not_of(' '));
                    value.erase(value.find_last_not_of(' ') + 1);
                    lost_blank = true;
                    return true;
                });
                if (lost_blank)
                    lost.push_back("the BLANK card (BLANK = " + value + " marks missing integer samples of the input, and the output's samples are " +
                                   (to.type == PixelType::f32 ? std::string("f32") : std::string(to_string(to.type)) + ", not " + to_string(from.type)) +
                                   ")");
            }
        } else {
            std::vector<std::string> keywords;
            for (const std::string& card : m.fits_cards) {
                const std::string k = fits_keyword(card);
                if (!k.empty() && k != "CONTINUE" && std::find(keywords.begin(), keywords.end(), k) == keywords.end()) keywords.push_back(k);
            }
            std::string named;
            for (std::size_t i = 0; i < std::min<std::size_t>(keywords.size(), 6); ++i) named += (i ? ", " : "") + keywords[i];
            if (keywords.size() > 6) named += ", ...";
            lost.push_back("the FITS header (" + std::to_string(m.fits_cards.size()) + " card" + (m.fits_cards.size() > 1 ? "s" : "") +
                           (named.empty() ? "" : ": " + named) + ")");
            m.fits_cards.clear();
            lost_fits = true;
        }
    }
    // What a TIFF output would not keep either: then the line does not send the user to .tif.
    const bool tiff_would_lose = (nothing && !m.exif.empty()) || !m.tiff_tags_not_carried.empty() || lost_fits;
    if (nothing) {
        if (!m.icc_profile.empty()) lost.push_back("the colour profile");
        if (!m.exif.empty()) lost.push_back("the Exif block");
        else if (m.orientation >= 2) lost.push_back("the orientation " + std::to_string(m.orientation));
        if (m.x_resolution > 0) lost.push_back("the resolution (" + resolution_text(m) + ")");
        if (!m.description.empty()) lost.push_back("the description");
        m.icc_profile.clear();
        m.exif.clear();
        m.orientation = 0;
        m.x_resolution = m.y_resolution = 0;
        m.description.clear();
    } else if (format == ImageFormat::tiff && !m.exif.empty()) {
        // A TIFF carries the orientation as its own tag; the camera's other Exif fields would need an Exif
        // directory, which apron does not write.
        lost.push_back("the Exif block but its orientation (apron writes no Exif directory into a TIFF)");
        if (m.orientation == 0) m.orientation = exif_orientation(m.exif);
        m.exif.clear();
    } else if (format == ImageFormat::jpeg) {
        if (m.exif.size() > 65533 - 6) lost.push_back("the Exif block but its orientation (over a JPEG segment's 64 KiB)");
        JpegDensity d;
        if (m.x_resolution > 0 && !jpeg_density(m, d)) {
            lost.push_back("the resolution (" + resolution_text(m) + "; JPEG's density holds whole numbers up to 65535)");
            m.x_resolution = m.y_resolution = 0;
        }
        if (m.description.size() > max_jpeg_comment) {
            lost.push_back("the description (" + std::to_string(m.description.size()) + " bytes; a JPEG comment holds 65533)");
            m.description.clear();
        }
    } else if (format == ImageFormat::png) {
        if (std::string why; !m.icc_profile.empty() && !png_keeps_profile(m.icc_profile, to.channels, &why)) {
            lost.push_back("the colour profile (libpng refuses it: " + why + ")");
            m.icc_profile.clear();
        }
        PngPhys p;
        if (m.x_resolution > 0 && !png_phys(m, p)) {
            lost.push_back("the resolution (" + resolution_text(m) + ", beyond PNG's pHYs)");
            m.x_resolution = m.y_resolution = 0;
        }
    }
    if (format != ImageFormat::tiff) {
        std::vector<std::string> geo, other;
        for (const TiffTag& t : m.tiff_tags) {
            if (is_geotiff(t.number)) geo.push_back(std::to_string(t.number));
            else if (!(format == ImageFormat::png && !nothing && png_keyword_of(t.number)))
                other.push_back(tag_name(t.number) ? tag_name(t.number) : std::to_string(t.number));
        }
        if (!geo.empty()) lost.push_back("GeoTIFF georeferencing (tags " + join(geo) + ")");
        if (!other.empty()) lost.push_back("the TIFF tag" + std::string(other.size() > 1 ? "s " : " ") + join(other));
        if (format == ImageFormat::png && !nothing) {
            std::vector<TiffTag> kept;
            for (TiffTag& t : m.tiff_tags)
                if (png_keyword_of(t.number)) kept.push_back(std::move(t));
            m.tiff_tags = std::move(kept);
        } else {
            m.tiff_tags.clear();
        }
    }
    if (!m.tiff_tags_not_carried.empty()) {
        lost.push_back("the TIFF tag" + std::string(m.tiff_tags_not_carried.size() > 1 ? "s " : " ") + join(m.tiff_tags_not_carried) +
                       " (apron carries no others than the resolution, description, text, GeoTIFF and GDAL tags)");
        m.tiff_tags_not_carried.clear();
    }
    if (lost.empty()) return {};
    std::string line = output + ": " + join(lost) + " not carried";
    // The FITS header alone: a whole-image run into .fits keeps it.
    const std::string keep_fits = lost_fits && lost.size() == 1 && !streamed ? "; write .fits to keep it" : "";
    if (nothing && streamed) {
        line += ": a streamed run writes metadata only into .tif and .png outputs";
    } else if (format == ImageFormat::tiff || (format == ImageFormat::fits && lost_blank && lost.size() == 1)) {
        // The parts say why (the Exif block, an OME-XML description, the BLANK card) where TIFF or FITS drops them.
        if (lost_fits && lost.size() == 1) line += ": TIFF has no place for it" + keep_fits;
    } else {
        line += ": " + std::string(format_name) + " has no place for " + (lost.size() > 1 ? "them" : "it");
        if (!tiff_would_lose) line += std::string("; write .tif to keep ") + (lost.size() > 1 ? "them" : "it");
        line += keep_fits;
    }
    return line;
}

}  // namespace apron
