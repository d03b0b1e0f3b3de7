// The input side of `apron batch`: GenConv job files, list files, directories and patterns resolved to the
// ordered inputs, output names from a pattern, and JSON pipeline files. Every refusal is checked to be an
// apron::Error of one line that names the file (and the line, or the JSON member) at fault.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "batch/inputs.hpp"
#include "batch/job_file.hpp"
#include "batch/naming.hpp"
#include "batch/pipeline_file.hpp"
#include "test_io_support.hpp"
#include "test_support.hpp"

namespace apron::batch {
namespace {

namespace fs = std::filesystem;
using iotest::fails_naming;
using iotest::ScratchDir;
using iotest::write_text;

std::vector<std::string> paths_of(const InputSet& set) {
    std::vector<std::string> paths;
    for (const auto& item : set.items) paths.push_back(item.path);
    return paths;
}

std::vector<InputItem> items(const std::vector<std::string>& paths) {
    std::vector<InputItem> out;
    for (const auto& p : paths) out.push_back({p, 0, 0});
    return out;
}

// Runs the current directory elsewhere for one test (list and job files hold paths relative to it).
class InDirectory {
public:
    explicit InDirectory(const fs::path& dir) : previous_(fs::current_path()) { fs::current_path(dir); }
    ~InDirectory() { fs::current_path(previous_); }

private:
    fs::path previous_;
};

// ---- job files ------------------------------------------------------------------------------------

TEST(BatchJobFile, ParsesHeaderPathsAndPadding) {
    const JobFile job = parse_job_file("3\n8\n4096 2048\n2 1\na.pgm\nimages/b c.pgm  \n  c.pgm\n\n\n", "job.txt");
    EXPECT_EQ(job.count, 3);
    EXPECT_EQ(job.bits, 8);
    EXPECT_EQ(job.max_width, 4096);
    EXPECT_EQ(job.max_height, 2048);
    EXPECT_EQ(job.pad_x, 2);
    EXPECT_EQ(job.pad_y, 1);
    EXPECT_EQ(job.paths, (std::vector<std::string>{"a.pgm", "images/b c.pgm", "c.pgm"}));
    EXPECT_EQ(job.path_lines, (std::vector<int>{5, 6, 7}));
}

TEST(BatchJobFile, CrlfBlanksAndNoFinalNewline) {
    const JobFile job = parse_job_file("\r\n2\r\n\r\n16\r\n 640\t480 \r\n0 3\r\nx.png\r\ny y.png", "crlf.job");
    EXPECT_EQ(job.count, 2);
    EXPECT_EQ(job.bits, 16);
    EXPECT_EQ(job.max_width, 640);
    EXPECT_EQ(job.max_height, 480);
    EXPECT_EQ(job.pad_x, 0);
    EXPECT_EQ(job.pad_y, 3);
    EXPECT_EQ(job.paths, (std::vector<std::string>{"x.png", "y y.png"}));
    EXPECT_EQ(job.path_lines, (std::vector<int>{7, 8}));
}

TEST(BatchJobFile, EmptyJobAndLimits) {
    const JobFile empty = parse_job_file("0\n16\n1 1\n0 0\n", "empty.job");
    EXPECT_EQ(empty.count, 0);
    EXPECT_EQ(empty.bits, 16);
    EXPECT_TRUE(empty.paths.empty());
    const JobFile widest = parse_job_file("1\n8\n1048576 3\n524287 1\n/abs/p.png\n", "wide.job");
    EXPECT_EQ(widest.max_width, 1 << 20);
    EXPECT_EQ(widest.pad_x, 524287);
    EXPECT_EQ(widest.paths.front(), "/abs/p.png");
}

TEST(BatchJobFile, MalformedFilesNameFileAndLine) {
    struct Case {
        std::string text;
        int line;
        std::string fragment;
    };
    const std::string header = "8\n10 10\n0 0\n";
    const std::vector<Case> cases = {
        {"", 1, "ends before the image count line"},
        {"\n\n", 2, "ends before the image count line"},
        {"3\n", 1, "ends before the bits per sample line"},
        {"3\n8\n10 10\n", 3, "ends before the padding x and y line"},
        {"x\n" + header, 1, "image count: expected one integer, found 'x'"},
        {"1.5\n" + header, 1, "image count: expected one integer, found '1.5'"},
        {"+-3\n" + header, 1, "expected one integer"},
        {"3 4\n" + header, 1, "expected one integer, found '3 4'"},
        {"x\r\n" + header, 1, "found 'x'"},
        {"-1\n" + header, 1, "image count -1 is negative"},
        {"100000001\n" + header, 1, "image count 100000001 is over the limit of 100000000"},
        {"99999999999999999999999\n" + header, 1, "over the limit"},
        {"1\n12\n10 10\n0 0\na\n", 2, "bits per sample 12: must be 8, 16 or 32"},
        {"1\n32\n10 10\n0 0\na\n", 2, "bits per sample 32: a GenConv job's 32-bit samples are int32"},
        {"1\n8 8\n10 10\n0 0\na\n", 2, "bits per sample: expected one integer"},
        {"1\n8\n100\n0 0\na\n", 3, "largest width and height: expected two integers, found '100'"},
        {"1\n8\n0 5\n0 0\na\n", 3, "largest width and height 0 5: each must be 1 to 1048576"},
        {"1\n8\n1048577 5\n0 0\na\n", 3, "each must be 1 to 1048576"},
        {"1\n8\n10 10\n-1 0\na\n", 4, "padding -1 0: must not be negative"},
        {"1\n8\n10 10\n5 0\na\n", 4, "padding 5 0 leaves no output of a 10x10 image"},
        {"1\n8\n10 9\n0 5\na\n", 4, "leaves no output of a 10x9 image"},
        {"1\n8\n10 10\n99999999999999999999 0\na\n", 4, "leaves no output"},
        {"1\n8\n10 10\n1 1 1\na\n", 4, "padding x and y: expected two integers"},
        {"3\n" + header + "a\nb\n", 1, "the count says 3 images but the file lists 2"},
        {"100000000\n" + header + "a\n", 1, "the count says 100000000 images but the file lists 1"},
        {"1\n" + header + "a\nb\n", 6, "more image paths than the count of 1 on line 1 (first extra: 'b')"},
        {"0\n" + header + "a\n", 5, "more image paths than the count of 0"},
        {"2\n" + header + "a\n\nb\n", 6, "blank line inside the list of image paths"},
        {"1\n" + header + std::string("a\0b\n", 4), 5, "NUL byte"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        EXPECT_TRUE(fails_naming([&] { parse_job_file(c.text, "dir/job.txt"); },
                                 "dir/job.txt:" + std::to_string(c.line) + ": ", c.fragment));
    }
}

TEST(BatchJobFile, CommentLinesAnywhere) {
    const JobFile job = parse_job_file("# made by GenConv\n2\n  # bits per sample\n16\n# largest\n64 32\n1 1\n"
                                       "# the images\na.pgm\n#b.pgm is out\nc.pgm\n# end\n",
                                       "job.txt");
    EXPECT_EQ(job.count, 2);
    EXPECT_EQ(job.bits, 16);
    EXPECT_EQ(job.bits_line, 4);
    EXPECT_EQ(job.max_width, 64);
    EXPECT_EQ(job.max_height, 32);
    EXPECT_EQ(job.paths, (std::vector<std::string>{"a.pgm", "c.pgm"}));
    EXPECT_EQ(job.path_lines, (std::vector<int>{9, 11}));
    // Errors still name the line the problem is on, comments counted.
    EXPECT_TRUE(fails_naming([] { parse_job_file("# c\n1\n# c\n7\n1 1\n0 0\na\n", "j"); }, "j:4: ",
                             "bits per sample 7"));
    EXPECT_TRUE(fails_naming([] { parse_job_file("# only comments\n# here\n", "j"); }, "j:2: ",
                             "ends before the image count line"));
}

TEST(BatchJobFile, Bits32IsGenConvsInt32AndRefusedUnlessSaidToBeFloat) {
    const std::string text = "1\n32\n8 8\n0 0\na.pfm\n";
    EXPECT_TRUE(fails_naming([&] { parse_job_file(text, "job.txt"); }, "job.txt:2: ",
                             "bits per sample 32: a GenConv job's 32-bit samples are int32, which apron does not "
                             "read (it reads 8- and 16-bit integer and 32-bit float images); convert the images to "
                             "16-bit, or to 32-bit float (PFM, TIFF) and pass --job-bits32 float"));
    JobOptions as_float;
    as_float.bits32 = JobBits32::float32;
    const JobFile job = parse_job_file(text, "job.txt", as_float);
    EXPECT_EQ(job.bits, 32);
    EXPECT_EQ(job.paths, std::vector<std::string>{"a.pfm"});
    // 8 and 16 are read whatever the option.
    EXPECT_EQ(parse_job_file("1\n16\n8 8\n0 0\na.pgm\n", "j").bits, 16);
    EXPECT_EQ(parse_job_file("1\n8\n8 8\n0 0\na.pgm\n", "j", as_float).bits, 8);
}

TEST(BatchJobFile, ControlBytesInMessagesAreEscaped) {
    EXPECT_TRUE(fails_naming([] { parse_job_file(std::string("\x1b[2J\x01\n8\n1 1\n0 0\n"), "j"); }, "j:1: ",
                             "found '\\x1b[2J\\x01'"));
}

TEST(BatchJobFile, ReadJobFile) {
    ScratchDir dir;
    write_text(dir.file("job.txt"), "1\n8\n4 4\n1 1\nimg.pgm\n");
    const JobFile job = read_job_file(dir.file("job.txt"));
    EXPECT_EQ(job.paths, std::vector<std::string>{"img.pgm"});
    EXPECT_EQ(job.pad_x, 1);
    EXPECT_TRUE(
        fails_naming([&] { read_job_file(dir.file("none.txt")); }, dir.file("none.txt"), "cannot open job file"));
    EXPECT_TRUE(fails_naming([&] { read_job_file(dir.path().string()); }, dir.path().string(), "it is a directory"));
}

TEST(BatchJobFile, LooksLikeJobFile) {
    EXPECT_TRUE(looks_like_job_file("3\n8\n4096 4096\n2 2\na.pgm\n"));
    EXPECT_TRUE(looks_like_job_file("0\r\n8\r\n1 1\r\n0 0\r\n"));
    EXPECT_TRUE(looks_like_job_file("\n\n 3 \n\n8\n4096\t4096\n2 2"));
    EXPECT_TRUE(looks_like_job_file("-1\n12\n0 0\n9 9\n"));  // job-shaped: parse_job_file then says what is wrong
    EXPECT_FALSE(looks_like_job_file(""));
    EXPECT_FALSE(looks_like_job_file("a.png\nb.png\nc.png\nd.png\n"));
    // A count and a bits line make it a job file; a bad rest is parse_job_file's to report, with its line.
    EXPECT_TRUE(looks_like_job_file("3\n8\n4096 4096\n"));
    EXPECT_TRUE(looks_like_job_file("3\n8\n4096\n2 2\n"));
    EXPECT_TRUE(looks_like_job_file("3\n8\n4096 4096\n2 2 2\n"));
    EXPECT_FALSE(looks_like_job_file("3\n"));
    EXPECT_FALSE(looks_like_job_file("3\na.png\n"));
    EXPECT_FALSE(looks_like_job_file("3 4\n8\n4096 4096\n2 2\n"));
    EXPECT_FALSE(looks_like_job_file("# images\na.png\nb.png\n"));
    // Comment lines are skipped wherever they are, the first line included (a GenConv job may begin so).
    EXPECT_TRUE(looks_like_job_file("# images\n3\n8\n1 1\n0 0\n"));
    EXPECT_TRUE(looks_like_job_file("  # a job\n\n3\n# bits:\n8\n"));
    EXPECT_FALSE(looks_like_job_file("# 3\n# 8\n"));
    EXPECT_FALSE(looks_like_job_file(std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16)));
}

// ---- resolving input specifications ----------------------------------------------------------------

class BatchInputs : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* name : {"b.png", "a.PGM", "c.jpeg", "z.tif", "notes.txt", "sub/d.png", "scan[1].png"})
            write_text(dir_.file(name), "not decoded here");
    }
    std::string file(const std::string& name) const { return dir_.file(name); }
    ScratchDir dir_;
};

TEST_F(BatchInputs, DirectorySortedImagesOnly) {
    const InputSet set = resolve_inputs({dir_.path().string()});
    EXPECT_EQ(paths_of(set),
              (std::vector<std::string>{file("a.PGM"), file("b.png"), file("c.jpeg"), file("scan[1].png"),
                                        file("z.tif")}));
    for (const auto& item : set.items) EXPECT_EQ(item.pad_x + item.pad_y, 0);
    EXPECT_FALSE(set.job.has_value());
    EXPECT_EQ(paths_of(resolve_inputs({file("sub")}, InputKind::directory)),
              std::vector<std::string>{file("sub/d.png")});
}

TEST_F(BatchInputs, DirectoryErrors) {
    fs::create_directory(file("empty"));
    write_text(file("text/readme.md"), "#");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("empty")}); }, file("empty"), "no image files"));
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("text")}); }, file("text"), "no image files"));
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("b.png")}, InputKind::directory); }, file("b.png"),
                             "not a directory"));
}

TEST_F(BatchInputs, GlobSortedRegularFilesOnly) {
    EXPECT_EQ(paths_of(resolve_inputs({file("*.png")})),
              (std::vector<std::string>{file("b.png"), file("scan[1].png")}));
    EXPECT_EQ(paths_of(resolve_inputs({file("[ab]*")})), (std::vector<std::string>{file("a.PGM"), file("b.png")}));
    // "*" also matches the text file (patterns are taken as given) but not the directory "sub".
    EXPECT_EQ(paths_of(resolve_inputs({file("*")})),
              (std::vector<std::string>{file("a.PGM"), file("b.png"), file("c.jpeg"), file("notes.txt"),
                                        file("scan[1].png"), file("z.tif")}));
    EXPECT_EQ(paths_of(resolve_inputs({file("*/*.png")})), std::vector<std::string>{file("sub/d.png")});
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("*.bmp")}); }, file("*.bmp"), "pattern matches no files"));
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("su?")}); }, file("su?"), "matches no regular files"));
}

TEST_F(BatchInputs, ExistingPathsWinOverPatternsAndImagesCountThemselves) {
    // "scan[1].png" exists: it is that image, not the pattern matching "scan1.png".
    EXPECT_EQ(paths_of(resolve_inputs({file("scan[1].png"), file("b.png")})),
              (std::vector<std::string>{file("scan[1].png"), file("b.png")}));
    EXPECT_EQ(paths_of(resolve_inputs({file("b.png")}, InputKind::glob)), std::vector<std::string>{file("b.png")});
}

TEST_F(BatchInputs, JobFileWithPadding) {
    write_text(file("job.txt"), "2\r\n16\r\n64 64\r\n3 2\r\n" + file("b.png") + "\r\n" + file("a.PGM") + "\r\n\r\n");
    const InputSet set = resolve_inputs({file("job.txt")});
    EXPECT_EQ(paths_of(set), (std::vector<std::string>{file("b.png"), file("a.PGM")}));
    for (const auto& item : set.items) {
        EXPECT_EQ(item.pad_x, 3);
        EXPECT_EQ(item.pad_y, 2);
    }
    ASSERT_TRUE(set.job.has_value());
    EXPECT_EQ(set.job->bits, 16);
    EXPECT_EQ(set.job->max_width, 64);
}

// A GenConv job file may begin with a comment: it is still a job file, not a list of images named '1'...
TEST_F(BatchInputs, JobFileStartingWithACommentIsAJobFile) {
    write_text(file("job.txt"), "# GenConv job\n1\n8\n64 64\n2 1\n" + file("b.png") + "\n");
    const InputSet set = resolve_inputs({file("job.txt")});
    ASSERT_TRUE(set.job.has_value());
    EXPECT_EQ(paths_of(set), std::vector<std::string>{file("b.png")});
    EXPECT_EQ(set.items[0].pad_x, 2);
    EXPECT_EQ(set.items[0].pad_y, 1);
    // ... and a job saying 32 bits is refused up front, or read as float when told so.
    write_text(file("job32.txt"), "# GenConv job\n1\n32\n64 64\n0 0\n" + file("b.png") + "\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("job32.txt")}); }, file("job32.txt") + ":3: ", "int32"));
    JobOptions as_float;
    as_float.bits32 = JobBits32::float32;
    EXPECT_EQ(resolve_inputs({file("job32.txt")}, InputKind::automatic, as_float).job->bits, 32);
}

TEST_F(BatchInputs, JobFileErrorsNameFileAndLine) {
    write_text(file("missing.job"), "2\n8\n64 64\n0 0\n" + file("b.png") + "\n" + file("nope.png") + "\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("missing.job")}); }, file("missing.job") + ":6: ",
                             "image '" + file("nope.png") + "' not found"));
    write_text(file("dir.job"), "1\n8\n64 64\n0 0\n" + file("sub") + "\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("dir.job")}); }, file("dir.job") + ":5: ", "is a directory"));
    write_text(file("short.job"), "3\n8\n64 64\n0 0\n" + file("b.png") + "\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("short.job")}); }, file("short.job") + ":1: ",
                             "the count says 3 images but the file lists 1"));
    write_text(file("zero.job"), "0\n8\n64 64\n0 0\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("zero.job")}); }, file("zero.job"), "lists no images"));
    write_text(file("one.job"), "1\n8\n64 64\n0 0\n" + file("b.png") + "\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("one.job"), file("one.job")}); }, file("one.job"),
                             "a second job file"));
}

TEST_F(BatchInputs, ListFileWithComments) {
    write_text(file("list.txt"), "# inputs\n\n  " + file("c.jpeg") + " \r\n   # indented comment\n" +
                                     file("sub/d.png") + "\n" + file("notes.txt") + "\n");
    const InputSet set = resolve_inputs({file("list.txt")});
    EXPECT_EQ(paths_of(set), (std::vector<std::string>{file("c.jpeg"), file("sub/d.png"), file("notes.txt")}));
    EXPECT_FALSE(set.job.has_value());
    for (const auto& item : set.items) EXPECT_EQ(item.pad_x + item.pad_y, 0);
}

TEST_F(BatchInputs, ListFileErrors) {
    write_text(file("typo.txt"), "# one\n" + file("b.png") + "\n" + file("bb.png") + "\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("typo.txt")}); }, file("typo.txt") + ":3: ",
                             "image '" + file("bb.png") + "' not found"));
    write_text(file("comments.txt"), "# nothing\n\n");
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("comments.txt")}); }, file("comments.txt"), "names no images"));
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("sub")}, InputKind::list); }, file("sub"),
                             "cannot read list file"));
}

TEST_F(BatchInputs, ForcedKindsAreHonoured) {
    InDirectory here(dir_.path());
    // Files named like a job header: the same text is a job by content, a list when forced.
    for (const char* name : {"1", "8", "4 4", "0 0"}) write_text(name, "");
    write_text("jobish.txt", "1\n8\n4 4\n0 0\nb.png\n");
    const InputSet as_job = resolve_inputs({"jobish.txt"});
    EXPECT_EQ(paths_of(as_job), std::vector<std::string>{"b.png"});
    EXPECT_TRUE(as_job.job.has_value());
    const InputSet as_list = resolve_inputs({"jobish.txt"}, InputKind::list);
    EXPECT_EQ(paths_of(as_list), (std::vector<std::string>{"1", "8", "4 4", "0 0", "b.png"}));
    EXPECT_FALSE(as_list.job.has_value());

    write_text("list.txt", "b.png\nc.jpeg\n");
    EXPECT_EQ(paths_of(resolve_inputs({"list.txt"})), (std::vector<std::string>{"b.png", "c.jpeg"}));
    EXPECT_TRUE(fails_naming([] { resolve_inputs({"list.txt"}, InputKind::job); }, "list.txt:1: ",
                             "image count: expected one integer, found 'b.png'"));
    EXPECT_TRUE(fails_naming([] { resolve_inputs({"sub"}, InputKind::job); }, "sub", "cannot read job file"));
}

TEST_F(BatchInputs, SeveralSpecsInOrderAndNothingFound) {
    write_text(file("list.txt"), file("z.tif") + "\n");
    EXPECT_EQ(paths_of(resolve_inputs({file("list.txt"), file("sub"), file("b.png")})),
              (std::vector<std::string>{file("z.tif"), file("sub/d.png"), file("b.png")}));
    EXPECT_TRUE(fails_naming([&] { resolve_inputs({file("nothing-here")}); }, file("nothing-here"), "no such file"));
    EXPECT_TRUE(fails_naming([] { resolve_inputs({}); }, "no input images"));
    EXPECT_TRUE(fails_naming([] { resolve_inputs({""}); }, "empty input specification"));
}

// ---- output names -----------------------------------------------------------------------------------

TEST(BatchNaming, DefaultKeepsWritableFormats) {
    const auto inputs = items({"in/a.png", "in/b.jpeg", "x/c.ppm", "d.pbm", "e.pam", "in/f.tiff", "g.JPG", "h.pfm",
                               "img.01.pgm", "noext", "i.PNG"});
#if APRON_HAVE_TIFF
    const std::string tiff = "out/f.tif";
#else
    const std::string tiff = "out/f.png";
#endif
    EXPECT_EQ(output_paths(inputs, {"out"}),
              (std::vector<std::string>{"out/a.png", "out/b.jpg", "out/c.ppm", "out/d.pgm", "out/e.png", tiff,
                                        "out/g.jpg", "out/h.pfm", "out/img.01.pgm", "out/noext.png", "out/i.png"}));
    EXPECT_EQ(output_paths(items({"a.png"}), {""}), std::vector<std::string>{"a.png"});
    EXPECT_EQ(output_paths(items({"a.png"}), {"out/"}), std::vector<std::string>{"out/a.png"});
}

TEST(BatchNaming, Fields) {
    const auto inputs = items({"in/a.png", "in/b.tar.jpeg", "c.ppm"});
    OutputNaming n{"o", "{index:5}_{stem}.{ext}"};
    EXPECT_EQ(output_paths(inputs, n),
              (std::vector<std::string>{"o/00000_a.png", "o/00001_b.tar.jpg", "o/00002_c.ppm"}));
    n.pattern = "{name}.{index}.png";
    EXPECT_EQ(output_paths(inputs, n),
              (std::vector<std::string>{"o/a.png.0.png", "o/b.tar.jpeg.1.png", "o/c.ppm.2.png"}));
    n.pattern = "{stem}_blur.{ext}";
    EXPECT_EQ(output_paths(inputs, n), (std::vector<std::string>{"o/a_blur.png", "o/b.tar_blur.jpg", "o/c_blur.ppm"}));
    // {index:N} pads, never cuts.
    std::vector<std::string> many;
    for (int i = 0; i < 12; ++i) many.push_back("p" + std::to_string(i) + ".png");
    n.pattern = "{index:1}.{ext}";
    EXPECT_EQ(output_paths(items(many), n).back(), "o/11.png");
}

TEST(BatchNaming, FormatOverrideAndLiteralExtension) {
    const auto inputs = items({"a.png", "b.jpeg", "c.ppm"});
    OutputNaming n{"out"};
    n.format = ImageFormat::pfm;
    EXPECT_EQ(output_paths(inputs, n), (std::vector<std::string>{"out/a.pfm", "out/b.pfm", "out/c.pfm"}));
    n.format = ImageFormat::pnm;  // a PNM input keeps its spelling
    EXPECT_EQ(output_paths(inputs, n), (std::vector<std::string>{"out/a.pgm", "out/b.pgm", "out/c.ppm"}));
    n.format = ImageFormat::jpeg;
    EXPECT_EQ(output_paths(inputs, n), (std::vector<std::string>{"out/a.jpg", "out/b.jpg", "out/c.jpg"}));
    n.format.reset();
    n.pattern = "{stem}.png";
    EXPECT_EQ(output_paths(inputs, n), (std::vector<std::string>{"out/a.png", "out/b.png", "out/c.png"}));
    n.pattern = "{stem}.{ext}.tif.pgm";  // the literal extension decides, and {ext} follows it
    EXPECT_EQ(output_paths(inputs, n), (std::vector<std::string>{"out/a.pgm.tif.pgm", "out/b.pgm.tif.pgm",
                                                                 "out/c.ppm.tif.pgm"}));
    // An explicit format and a name of another format disagree: refused, not written under a wrong name.
    n.format = ImageFormat::png;
    n.pattern = "{stem}.jpg";
    EXPECT_TRUE(fails_naming([&] { output_paths(inputs, n); }, "output pattern '{stem}.jpg'", "output format is png"));
    n.pattern = "{name}";
    EXPECT_TRUE(fails_naming([&] { output_paths(items({"b.jpeg"}), n); }, "output pattern '{name}'",
                             "gives 'b.jpeg' for 'b.jpeg', a jpeg file, but the output format is png"));
}

TEST(BatchNaming, BadPatterns) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "empty"},
        {"sub/{stem}.png", "contains '/'"},
        {"{stem", "'{' at column 1 is not closed"},
        {"{{stem}}.png", "'{' at column 1 is not closed"},
        {"stem}.png", "'}' at column 5 closes no field"},
        {"{stem}}.png", "'}' at column 7 closes no field"},
        {"{foo}.png", "unknown field {foo} (use {name}, {stem}, {ext}, {index} or {index:N})"},
        {"{}.png", "unknown field {}"},
        {"{index:0}.png", "{index:0}: the width must be 1 to 18"},
        {"{index:x}.png", "{index:x}"},
        {"{index:19}.png", "{index:19}"},
        {"{index:}.png", "{index:}"},
        {"{stem}.xyz", "unknown image file extension '.xyz'"},
        {"{stem}", "gives 'a' for 'in/a.png': no file extension"},
        {"{stem}.{ext}x", "gives 'a.pngx'"},
        {".", "no file extension"},
        {"..", "no file extension"},
    };
    for (const auto& [pattern, fragment] : cases) {
        SCOPED_TRACE(pattern);
        EXPECT_TRUE(fails_naming([&] { output_paths(items({"in/a.png"}), {"out", pattern}); },
                                 "output pattern '" + pattern + "'", fragment));
    }
}

TEST(BatchNaming, Collisions) {
    EXPECT_TRUE(fails_naming([] { output_paths(items({"x/a.png", "y/b.png", "y/a.jpg"}), {"out", "{stem}.png"}); },
                             "inputs 'x/a.png' and 'y/a.jpg' would both be written to 'out/a.png'", "{index}"));
    EXPECT_TRUE(fails_naming([] { output_paths(items({"x/a.png", "x/a.png"}), {"out"}); }, "'x/a.png'",
                             "listed twice (#0 and #1)"));
    EXPECT_TRUE(fails_naming([] { output_paths(items({"a.png", "b.png"}), {"out", "same.png"}); },
                             "'out/same.png'", "output pattern 'same.png'"));
    EXPECT_EQ(output_paths(items({"x/a.png", "y/a.png"}), {"out", "{index}_{name}"}),
              (std::vector<std::string>{"out/0_a.png", "out/1_a.png"}));
}

TEST(BatchNaming, NeverOverwritesAnInput) {
    ScratchDir dir;
    write_text(dir.file("in/a.png"), "x");
    write_text(dir.file("in/b.jpeg"), "x");
    const auto inputs = items({dir.file("in/a.png"), dir.file("in/b.jpeg")});
    EXPECT_TRUE(fails_naming([&] { output_paths(inputs, {dir.file("in/.")}); }, "input '" + dir.file("in/a.png") + "'",
                             "would overwrite the input"));
    // b.jpeg -> b.jpg is another file: writing beside the inputs is fine when nothing is overwritten.
    EXPECT_EQ(output_paths(items({dir.file("in/b.jpeg")}), {dir.file("in")}),
              std::vector<std::string>{dir.file("in/b.jpg")});
}

TEST(BatchNaming, FormatNames) {
    EXPECT_EQ(parse_format("png"), ImageFormat::png);
    EXPECT_EQ(parse_format("JPEG"), ImageFormat::jpeg);
    EXPECT_EQ(parse_format("jpg"), ImageFormat::jpeg);
    EXPECT_EQ(parse_format("ppm"), ImageFormat::pnm);
    EXPECT_EQ(parse_format("pnm"), ImageFormat::pnm);
    EXPECT_EQ(parse_format("pfm"), ImageFormat::pfm);
    EXPECT_EQ(parse_format("tiff"), ImageFormat::tiff);
    EXPECT_FALSE(parse_format("bmp").has_value());
    EXPECT_FALSE(parse_format("").has_value());
    EXPECT_STREQ(extension_of(ImageFormat::jpeg), "jpg");
    EXPECT_STREQ(extension_of(ImageFormat::pnm), "pgm");
    EXPECT_STREQ(extension_of(ImageFormat::tiff), "tif");
    EXPECT_STREQ(extension_of(ImageFormat::pfm), "pfm");
    EXPECT_STREQ(extension_of(ImageFormat::png), "png");
}

// ---- pipeline files -----------------------------------------------------------------------------------

TEST(BatchPipelineFile, StringsAndObjects) {
    const PipelineFile p = parse_pipeline_file(R"({
        "ops": ["gaussian:sigma=2",
                {"op": "dilate", "se": "ellipse:5x5", "iterations": 2},
                {"op": "gaussian", "sigma": 1.5, "border": "wrap", "delta": -3},
                {"op": "box", "width": 5.0, "scale": 0.1, "delta": 1e-7},
                {"op": "sharpen"}],
        "out_type": "f32",
        "algo": "low-rank"
    })",
                                               "p.json");
    EXPECT_EQ(p.ops, (std::vector<std::string>{"gaussian:sigma=2", "dilate:se=ellipse:5x5,iterations=2",
                                               "gaussian:sigma=1.5,border=wrap,delta=-3",
                                               "box:width=5,scale=0.1,delta=1e-07", "sharpen"}));
    EXPECT_EQ(p.out_type, PixelType::f32);
    EXPECT_EQ(p.algo, Algorithm::low_rank);

    const PipelineFile minimal = parse_pipeline_file(R"({"ops": ["sharpen"]})", "m.json");
    EXPECT_EQ(minimal.ops, std::vector<std::string>{"sharpen"});
    EXPECT_FALSE(minimal.out_type.has_value());
    EXPECT_FALSE(minimal.algo.has_value());
    const PipelineFile typed = parse_pipeline_file(R"({"ops": ["box"], "out_type": "u16", "algo": "fft"})", "x");
    EXPECT_EQ(typed.out_type, PixelType::u16);
    EXPECT_EQ(typed.algo, Algorithm::fft);
    EXPECT_EQ(parse_pipeline_file(R"({"ops": ["box"], "algo": "direct"})", "x").algo, Algorithm::direct);
}

TEST(BatchPipelineFile, RelativeMaskPathsFollowTheFile) {
    const std::string samples = test::source_path("samples");
    const PipelineFile p = parse_pipeline_file(R"({"ops": [
        {"op": "correlate", "mask": "masks/edge3x3.kernel", "border": "wrap"},
        "convolve:border=nearest,mask=masks/even4x4.kernel",
        {"op": "erode", "se": "masks/diamond5x5.se"},
        "dilate:se=disk:2",
        {"op": "correlate", "mask": ")" + samples + R"(/masks/binomial5x5.kernel"}]})",
                                               "p.json", samples);
    EXPECT_EQ(p.ops, (std::vector<std::string>{
                         "correlate:mask=" + samples + "/masks/edge3x3.kernel,border=wrap",
                         "convolve:border=nearest,mask=" + samples + "/masks/even4x4.kernel",
                         "erode:se=" + samples + "/masks/diamond5x5.se", "dilate:se=disk:2",
                         "correlate:mask=" + samples + "/masks/binomial5x5.kernel"}));

    // read_pipeline_file: relative to the file's own directory, not to the current one.
    ScratchDir dir;
    write_text(dir.file("conf/p.json"), R"({"ops": [{"op": "correlate", "mask": "edge.kernel"}]})");
    fs::copy_file(test::source_path("samples/masks/edge3x3.kernel"), dir.file("conf/edge.kernel"));
    EXPECT_EQ(read_pipeline_file(dir.file("conf/p.json")).ops,
              std::vector<std::string>{"correlate:mask=" + dir.file("conf/edge.kernel")});
    EXPECT_TRUE(fails_naming([&] { parse_pipeline_file(R"({"ops": [{"op": "correlate", "mask": "edge.kernel"}]})",
                                                       "q.json", dir.file("elsewhere")); },
                             "q.json: ops[0].mask: ", dir.file("elsewhere/edge.kernel")));
    EXPECT_TRUE(fails_naming([&] { read_pipeline_file(dir.file("none.json")); }, dir.file("none.json"),
                             "cannot open pipeline file"));
}

TEST(BatchPipelineFile, JsonSyntaxErrorsGiveLineAndColumn) {
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file("{\n  \"ops\": [\n    \"box\",\n  ]\n}\n", "bad.json"); },
                             "bad.json: line 4, column 3: ", "syntax error"));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file("", "empty.json"); }, "empty.json: line 1, column 1: "));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file("{\"ops\": [\"box\"]} x", "trail.json"); },
                             "trail.json: line 1, column 18: "));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(std::string("{\"ops\": [\"\xff\"]}"), "utf.json"); },
                             "utf.json: line 1, column "));
}

TEST(BatchPipelineFile, StructureErrorsNameTheMember) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"ops": ["box"], "outtype": "u8"})", "p.json: unknown member 'outtype' (known: ops, out_type, algo)"},
        {R"(["box"])", "p.json: the top level must be an object"},
        {R"({})", "p.json: ops: missing"},
        {R"({"out_type": "u8"})", "p.json: ops: missing"},
        {R"({"ops": []})", "p.json: ops: empty"},
        {R"({"ops": "box"})", "p.json: ops: must be an array of operations, found string"},
        {R"({"ops": ["box", 3]})", "p.json: ops[1]: must be an OP string or an object"},
        {R"({"ops": ["  "]})", "p.json: ops[0]: empty operation"},
        {R"({"ops": [{"sigma": 2}]})", "p.json: ops[0]: missing \"op\""},
        {R"({"ops": [{"op": 7}]})", "p.json: ops[0].op: must be a string, found number"},
        {R"({"ops": [{"op": "blurr"}]})", "p.json: ops[0].op: unknown operation 'blurr'"},
        {R"({"ops": [{"op": "box:width=3"}]})", "p.json: ops[0].op: 'box:width=3' is not an operation name"},
        {R"({"ops": ["box", {"op": "gaussian", "sigmaa": 2}]})",
         "p.json: ops[1].sigmaa: unknown parameter of gaussian"},
        {R"({"ops": [{"op": "separable", "row": [1, 2, 1]}]})",
         "p.json: ops[0].row: must be a string, number or boolean, found array (write weight vectors as a string"},
        {R"({"ops": [{"op": "box", "width": null}]})",
         "p.json: ops[0].width: must be a string, number or boolean, found null"},
        {R"({"ops": [{"op": "box", "border": "wrap,width=5"}]})", "p.json: ops[0].border: 'wrap,width=5' holds ','"},
        {R"({"ops": [{"op": "box", "a=b": 1}]})", "p.json: ops[0].a=b: a parameter name must not"},
        {R"({"ops": ["box"], "ops": ["sharpen"]})", "p.json: member 'ops' given twice"},
        {R"({"ops": ["box", {"op": "box", "width": 3, "width": 5}]})", "p.json: ops[1]: member 'width' given twice"},
        {R"({"ops": ["box"], "out_type": "u32"})", "p.json: out_type: unknown pixel type 'u32' (use u8, u16 or f32)"},
        {R"({"ops": ["box"], "out_type": 8})", "p.json: out_type: must be a string, found number"},
        {R"({"ops": ["box"], "algo": "fastest"})",
         "p.json: algo: unknown algorithm 'fastest' (use auto, direct, separable, low-rank, fft, tensor)"},
        {"{\"ops\": [" + std::string(40, '[') + std::string(40, ']') + "]}", "p.json: ops[0]"},
    };
    for (const auto& [json, expected] : cases) {
        SCOPED_TRACE(json);
        EXPECT_TRUE(fails_naming([&] { parse_pipeline_file(json, "p.json"); }, expected));
    }
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(std::string(100, '['), "deep.json"); }, "deep.json: ",
                             "nested too deeply"));
    std::string wide = R"({"ops": ["box"], "x": {)";
    for (int i = 0; i < 1100; ++i) wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\": 1";
    EXPECT_TRUE(fails_naming([&] { parse_pipeline_file(wide + "}}", "wide.json"); }, "wide.json: x: ",
                             "more than 1024 members"));
}

TEST(BatchPipelineFile, BadOpsNameTheirPosition) {
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(R"({"ops": ["box", "gaussian:sigma=-1"]})", "p.json"); },
                             "p.json: ops[1]: gaussian:sigma=-1: sigma: ", "out of range"));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(R"({"ops": ["blurr:sigma=1"]})", "p.json"); },
                             "p.json: ops[0]: ", "unknown operation 'blurr'"));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(R"({"ops": ["box:widht=3"]})", "p.json"); },
                             "p.json: ops[0]: ", "unknown parameter 'widht'"));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(R"({"ops": [{"op": "gaussian", "sigma": -1}]})", "p.json"); },
                             "p.json: ops[0].sigma: -1 is out of range"));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(R"({"ops": [{"op": "gaussian", "sigma": true}]})", "p.json"); },
                             "p.json: ops[0].sigma: 'true' is not a finite number"));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(R"({"ops": [{"op": "gaussian"}]})", "p.json"); },
                             "p.json: ops[0].sigma: missing (required)"));
    EXPECT_TRUE(fails_naming([] { parse_pipeline_file(R"({"ops": [{"op": "box", "width": 2.5}]})", "p.json"); },
                             "p.json: ops[0].width: '2.5' is not an integer"));
    // A mistyped shape stays a shape (it has a ':'), not a file under the pipeline's directory.
    EXPECT_TRUE(fails_naming(
        [] { parse_pipeline_file(R"({"ops": [{"op": "dilate", "se": "star:3x3"}]})", "p.json", "/nonexistent"); },
        "p.json: ops[0].se: ", "unknown shape 'star'"));
}

} // namespace
} // namespace apron::batch
