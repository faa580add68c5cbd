// SPDX-License-Identifier: MIT
// The .npy format as numpy/lib/format.py writes it: the magic "\x93NUMPY", a version (1.0, 2.0,
// 3.0), a little-endian header length (u16 for 1.0, u32 after), a Python dict literal padded with
// spaces so that the data start at a multiple of 64 bytes, a '\n', then the array data.
#include "loaderlens/probes/dataset.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

constexpr std::string_view npy_magic{"\x93NUMPY", 6};
constexpr std::int64_t header_alignment = 64;
// What numpy adds after the dict so that the first dimension can grow in place.
constexpr std::size_t growth_axis_max_digits = 21;
// A valid header holds three short entries (numpy itself refuses more than 10000 characters by
// default); a larger length field means a damaged file, and is not worth reading into memory.
constexpr std::int64_t max_header_bytes = 1 << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw DatasetError(path + ": " + what);
}

// Header text quoted in a message: control characters escaped so that the message stays one line.
std::string excerpt(std::string_view text, std::size_t limit = 60) {
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n')
            out += "\\n";
        else if (c < 0x20 || c == 0x7f)
            out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
        else
            out += static_cast<char>(c);
    }
    if (text.size() > limit) out += "...";
    return out;
}

std::string python_tuple(const std::vector<std::int64_t>& values) {
    std::string out = "(";
    for (std::size_t i = 0; i < values.size(); ++i)
        out += (i ? ", " : "") + std::to_string(values[i]);
    return out + (values.size() == 1 ? ",)" : ")");
}

// The subset of Python literals a .npy header can contain (numpy reads it with ast.literal_eval):
// strings, integers, True/False/None, tuples, lists and dicts.
struct PyValue {
    enum class Type { string, integer, boolean, none, tuple, list, dict };
    Type type = Type::none;
    std::string text;           // string
    std::int64_t integer = 0;   // integer
    bool boolean = false;       // boolean
    std::vector<PyValue> items; // tuple, list; dict: key, value, key, value...
};

class PyLiteralParser {
  public:
    PyLiteralParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

    PyValue parse_document() {
        PyValue value = parse_value();
        skip_space();
        if (pos_ != text_.size()) broken("unexpected text after the dict");
        return value;
    }

  private:
    [[noreturn]] void broken(const std::string& what) {
        if (text_.find_first_not_of(" \t\r\n", pos_) == std::string_view::npos)
            fail(path_, "broken .npy header dict (" + what + " at the end of the header)");
        fail(path_, "broken .npy header dict (" + what + " at offset " + std::to_string(pos_) +
                        ", near \"" + excerpt(text_.substr(pos_, 24)) + "\")");
    }

    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                       text_[pos_] == '\r' || text_[pos_] == '\n'))
            ++pos_;
    }
    bool peek_is(char c) {
        skip_space();
        return pos_ < text_.size() && text_[pos_] == c;
    }
    bool accept(char c) {
        if (!peek_is(c)) return false;
        ++pos_;
        return true;
    }
    bool accept_word(std::string_view word) {
        skip_space();
        if (text_.substr(pos_, word.size()) != word) return false;
        const std::size_t end = pos_ + word.size();
        if (end < text_.size() &&
            (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
            return false;
        pos_ = end;
        return true;
    }

    PyValue parse_value() {
        if (++depth_ > 32) broken("nesting too deep");
        PyValue value;
        skip_space();
        if (pos_ >= text_.size()) broken("unexpected end");
        const char c = text_[pos_];
        if (c == '{') {
            value.type = PyValue::Type::dict;
            parse_sequence('{', '}', value.items, true);
        } else if (c == '[') {
            value.type = PyValue::Type::list;
            parse_sequence('[', ']', value.items, false);
        } else if (c == '(') {
            // "(5)" is the integer 5, "(5,)" a one-tuple, "()" the empty tuple.
            const bool is_tuple = parse_sequence('(', ')', value.items, false);
            if (!is_tuple)
                value = PyValue(value.items.front());
            else
                value.type = PyValue::Type::tuple;
        } else if (c == '\'' || c == '"' ||
                   ((c == 'u' || c == 'b') && pos_ + 1 < text_.size() &&
                    (text_[pos_ + 1] == '\'' || text_[pos_ + 1] == '"'))) {
            value.type = PyValue::Type::string;
            value.text = parse_string();
        } else if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) {
            value.type = PyValue::Type::integer;
            value.integer = parse_integer();
        } else if (const bool is_true = accept_word("True"); is_true || accept_word("False")) {
            value.type = PyValue::Type::boolean;
            value.boolean = is_true;
        } else if (accept_word("None")) {
            value.type = PyValue::Type::none;
        } else {
            broken("expected a value");
        }
        --depth_;
        return value;
    }

    // Items up to `close`, with an optional trailing comma. Returns false for one item without a
    // comma: "(x)" is x in parentheses, "(x,)" a tuple.
    bool parse_sequence(char open, char close, std::vector<PyValue>& items, bool key_value) {
        accept(open);
        bool comma = false;
        while (!accept(close)) {
            if (!items.empty() && !comma) broken(std::string("expected ',' or '") + close + "'");
            items.push_back(parse_value());
            if (key_value) {
                if (!accept(':')) broken("expected ':'");
                items.push_back(parse_value());
            }
            comma = accept(',');
        }
        return comma || items.size() != 1;
    }

    std::string parse_string() {
        if (text_[pos_] == 'u' || text_[pos_] == 'b') ++pos_;
        const char quote = text_[pos_++];
        std::string out;
        while (true) {
            if (pos_ >= text_.size() || text_[pos_] == '\n') broken("unterminated string");
            char c = text_[pos_++];
            if (c == quote) return out;
            if (c == '\\') {
                if (pos_ >= text_.size()) broken("unterminated string");
                c = text_[pos_++];
                switch (c) {
                case 'n':
                    c = '\n';
                    break;
                case 't':
                    c = '\t';
                    break;
                case 'r':
                    c = '\r';
                    break;
                case '0':
                    c = '\0';
                    break;
                case '\\':
                case '\'':
                case '"':
                    break;
                default:
                    broken("unsupported escape in a string");
                }
            }
            out += c;
        }
    }

    std::int64_t parse_integer() {
        const bool negative = text_[pos_] == '-';
        if (text_[pos_] == '-' || text_[pos_] == '+') ++pos_;
        if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
            broken("expected digits");
        std::int64_t value = 0;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
            const int digit = text_[pos_++] - '0';
            if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
                broken("integer too large");
            value = value * 10 + digit;
        }
        // Python 2 wrote long integers as "10L"; numpy still reads such old files.
        if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
        if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) ||
                                    text_[pos_] == '.' || text_[pos_] == '_'))
            broken("not an integer");
        return negative ? -value : value;
    }

    std::string_view text_;
    const std::string& path_;
    std::size_t pos_ = 0;
    int depth_ = 0;
};

// Sizes are products of untrusted header fields: refuse anything that overflows.
std::int64_t checked_multiply(std::int64_t a, std::int64_t b, const std::string& path) {
    std::int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product)) fail(path, "array size overflows 64 bits");
    return product;
}

struct OpenFile {
    int fd = -1;
    ~OpenFile() {
        if (fd >= 0) ::close(fd);
    }
};

// Reads exactly `size` bytes at `offset` (the caller has checked they are inside the file).
std::string read_at(int fd, std::int64_t offset, std::size_t size, const std::string& path) {
    std::string out(size, '\0');
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd, out.data() + done, size - done, offset + done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(path, std::string("cannot read (") + std::strerror(errno) + ")");
        if (n == 0) fail(path, "the file shrank while being read");
        done += static_cast<std::size_t>(n);
    }
    return out;
}

std::uint32_t little_endian(std::string_view bytes) {
    std::uint32_t value = 0;
    for (std::size_t i = bytes.size(); i-- > 0;)
        value = value << 8 | static_cast<unsigned char>(bytes[i]);
    return value;
}

void check_dict(const PyValue& dict, NpyHeader& header, const std::string& path) {
    if (dict.type != PyValue::Type::dict) fail(path, "the .npy header is not a dict");
    const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
    for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
        const PyValue& key = dict.items[i];
        if (key.type != PyValue::Type::string) fail(path, "a .npy header key is not a string");
        const PyValue** slot = key.text == "descr"           ? &descr
                               : key.text == "fortran_order" ? &fortran
                               : key.text == "shape"         ? &shape
                                                             : nullptr;
        if (!slot) fail(path, "unexpected key '" + excerpt(key.text) + "' in the .npy header");
        if (*slot) fail(path, "duplicate key '" + key.text + "' in the .npy header");
        *slot = &dict.items[i + 1];
    }
    for (auto [value, name] : {std::pair{descr, "descr"}, std::pair{fortran, "fortran_order"},
                               std::pair{shape, "shape"}})
        if (!value) fail(path, std::string("the .npy header has no '") + name + "' entry");

    if (descr->type == PyValue::Type::list)
        fail(path, "structured dtypes are not supported (descr is a list of fields)");
    if (descr->type != PyValue::Type::string) fail(path, "descr is not a dtype string");
    header.descr = descr->text;
    header.itemsize = npy_itemsize(header.descr, path);

    if (fortran->type != PyValue::Type::boolean) fail(path, "fortran_order is not True or False");
    header.fortran_order = fortran->boolean;
    if (header.fortran_order)
        fail(path, "Fortran-order arrays are not supported (fortran_order: True); save a "
                   "C-order copy (numpy.ascontiguousarray)");

    if (shape->type != PyValue::Type::tuple) fail(path, "shape is not a tuple");
    for (const PyValue& dim : shape->items) {
        if (dim.type != PyValue::Type::integer || dim.integer < 0)
            fail(path, "shape has an entry that is not a non-negative integer");
        header.shape.push_back(dim.integer);
    }
    if (header.shape.empty())
        fail(path, "0-d array (shape ()): no sample axis, a dataset needs at least one dimension");
}

} // namespace

std::int64_t npy_itemsize(const std::string& descr, const std::string& path) {
    std::string_view code = descr;
    const std::string quoted = "'" + excerpt(descr) + "'";
    if (!code.empty() && std::string_view("<>|=").find(code.front()) != std::string_view::npos)
        code.remove_prefix(1);
    if (code.empty()) fail(path, "empty dtype descr");
    const char kind = code.front();
    if (kind == 'O') fail(path, "object arrays are not supported (descr " + quoted + ")");
    std::string_view digits = code.substr(1);
    // Datetimes carry their unit: "<M8[ns]".
    if ((kind == 'M' || kind == 'm') && digits.size() > 2 && digits.back() == ']')
        if (std::size_t bracket = digits.find('['); bracket != std::string_view::npos)
            digits = digits.substr(0, bracket);
    std::int64_t count = 0;
    if (digits.empty() || digits.size() > 12) fail(path, "unknown dtype descr " + quoted);
    for (char c : digits) {
        if (!std::isdigit(static_cast<unsigned char>(c)))
            fail(path, "unknown dtype descr " + quoted);
        count = count * 10 + (c - '0');
    }
    auto one_of = [&](std::initializer_list<std::int64_t> sizes) {
        for (std::int64_t size : sizes)
            if (count == size) return count;
        fail(path, "unknown dtype descr " + quoted);
    };
    switch (kind) {
    case 'b':
        return one_of({1});
    case 'i':
    case 'u':
        return one_of({1, 2, 4, 8});
    case 'f':
        return one_of({2, 4, 8, 12, 16});
    case 'c':
        return one_of({8, 16, 24, 32});
    case 'M':
    case 'm':
        return one_of({8});
    case 'S':
    case 'a':
    case 'V':
    case 'U':
        if (count == 0) fail(path, "zero-size elements (descr " + quoted + ")");
        return kind == 'U' ? count * 4 : count; // UCS-4 characters
    default:
        fail(path, "unknown dtype descr " + quoted);
    }
}

std::string make_npy_header(const std::string& descr, const std::vector<std::int64_t>& shape,
                            int version) {
    // Byte for byte what numpy.save writes: sorted keys, repr() values, room to grow shape[0].
    std::string dict = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + python_tuple(shape) + ", }";
    if (!shape.empty()) {
        const std::size_t digits = std::to_string(shape.front()).size();
        dict.append(growth_axis_max_digits - std::min(digits, growth_axis_max_digits), ' ');
    }
    if (version < 0 || version > 3)
        throw DatasetError("unsupported .npy format version " + std::to_string(version));
    auto wrap = [&](int chosen) {
        const std::size_t length_field = chosen == 1 ? 2 : 4;
        const std::size_t prefix = npy_magic.size() + 2 + length_field;
        const std::size_t text_length = dict.size() + 1; // with the final newline
        const std::size_t padding = header_alignment - (prefix + text_length) % header_alignment;
        const std::size_t header_length = text_length + padding;
        std::string out(npy_magic);
        out += static_cast<char>(chosen);
        out += '\0';
        for (std::size_t i = 0; i < length_field; ++i)
            out += static_cast<char>(header_length >> (8 * i) & 0xff);
        out += dict;
        out.append(padding, ' ');
        out += '\n';
        return std::pair{out, header_length};
    };
    auto [header, length] = wrap(version == 0 ? 1 : version);
    if (length > 0xffff && (version == 0 || version == 1)) {
        if (version == 1)
            throw DatasetError("the .npy header (" + std::to_string(length) +
                               " bytes) does not fit format version 1.0");
        header = wrap(2).first;
    }
    return header;
}

NpyHeader read_npy_header(const std::string& path) {
    OpenFile file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(file.fd, &st) != 0)
        fail(path, std::string("cannot stat (") + std::strerror(errno) + ")");
    if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
    const std::int64_t file_size = st.st_size;

    if (file_size < static_cast<std::int64_t>(npy_magic.size()) + 2 ||
        read_at(file.fd, 0, npy_magic.size(), path) != npy_magic)
        fail(path, "not a .npy file (it does not start with \"\\x93NUMPY\")");
    NpyHeader header;
    const std::string version = read_at(file.fd, npy_magic.size(), 2, path);
    header.major_version = static_cast<unsigned char>(version[0]);
    header.minor_version = static_cast<unsigned char>(version[1]);
    if (header.major_version < 1 || header.major_version > 3 || header.minor_version != 0)
        fail(path, "unsupported .npy format version " + std::to_string(header.major_version) + "." +
                       std::to_string(header.minor_version) + " (known: 1.0, 2.0, 3.0)");

    const std::int64_t length_field = header.major_version == 1 ? 2 : 4;
    const std::int64_t prefix = static_cast<std::int64_t>(npy_magic.size()) + 2 + length_field;
    if (file_size < prefix) fail(path, "truncated inside the .npy header length");
    const std::int64_t header_length =
        little_endian(read_at(file.fd, npy_magic.size() + 2, length_field, path));
    if (header_length > max_header_bytes)
        fail(path, "implausible .npy header length " + std::to_string(header_length) +
                       " bytes (damaged file?)");
    header.data_offset = prefix + header_length;
    if (header.data_offset > file_size)
        fail(path, "truncated: the .npy header is " + std::to_string(header.data_offset) +
                       " bytes long, the file has " + std::to_string(file_size));

    // Versions 1.0 and 2.0 are latin-1, 3.0 utf-8: either way the keys, values and syntax are
    // ASCII, which is all the parser looks at.
    const std::string text = read_at(file.fd, prefix, header_length, path);
    check_dict(PyLiteralParser(text, path).parse_document(), header, path);

    std::int64_t data_bytes = header.itemsize;
    for (std::int64_t dim : header.shape)
        data_bytes = checked_multiply(data_bytes, dim, path);
    const std::int64_t actual = file_size - header.data_offset;
    if (actual < data_bytes)
        fail(path, "truncated: the header promises " + std::to_string(data_bytes) +
                       " data bytes, the file has " + std::to_string(actual));
    if (actual > data_bytes)
        fail(path, std::to_string(actual - data_bytes) +
                       " trailing bytes after the array data: the header promises " +
                       std::to_string(data_bytes) + " data bytes, the file has " +
                       std::to_string(actual));
    return header;
}

} // namespace loaderlens::probes
