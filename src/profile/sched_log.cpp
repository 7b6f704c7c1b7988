#include "profile/sched_log.hpp"
#include "core/strings.hpp"
#include "core/utf8.hpp"

#include <cctype>
#include <sstream>

namespace sb {

namespace {

bool read_int(const std::string& s, size_t& pos, int& out) {
    while (pos < s.size() && s[pos] == ' ')
        ++pos;
    size_t start = pos;
    long v = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
        v = v * 10 + (s[pos] - '0');
        if (v > 100000000)
            return false;
        ++pos;
    }
    if (pos == start)
        return false;
    out = static_cast<int>(v);
    return true;
}

// "## SPLIT #3: RPC0[127.0.0.1:5] # 2 inputs: [a (  16K)] [b (view) (   1M)] "
bool parse_split(const std::string& line, SchedSplit& sp) {
    const std::string head = "## SPLIT #";
    if (line.rfind(head, 0) != 0)
        return false;
    size_t pos = head.size();
    if (!read_int(line, pos, sp.index))
        return false;
    if (line.compare(pos, 2, ": ") != 0)
        return false;
    pos += 2;
    const size_t marker = line.find(" inputs", pos);
    if (marker == std::string::npos)
        return false;
    // The backend name ends at the last " # " before " inputs".
    const size_t hash = line.rfind(" # ", marker);
    if (hash == std::string::npos || hash < pos)
        return false;
    // Names reach result documents: made valid UTF-8 here (the dump cuts names by bytes).
    sp.backend = valid_utf8(line.substr(pos, hash - pos));
    size_t npos_ = hash + 3;
    if (!read_int(line, npos_, sp.n_inputs))
        return false;
    size_t p = marker + 7;
    while ((p = line.find('[', p)) != std::string::npos) {
        size_t close = line.find(")]", p);
        if (close == std::string::npos)
            break;
        std::string inner = line.substr(p + 1, close - p - 1);  // "name (size"
        size_t paren = inner.rfind(" (");
        sp.inputs.push_back(
            valid_utf8(trim(paren == std::string::npos ? inner : inner.substr(0, paren))));
        p = close + 2;
    }
    return true;
}

// "node #  5 (  RMS_NORM):          attn_norm-0 (  4K) [  CPU  ...]"
bool parse_node(const std::string& line, int& index, SchedNodeLine& node) {
    const std::string head = "node #";
    if (line.rfind(head, 0) != 0)
        return false;
    size_t pos = head.size();
    if (!read_int(line, pos, index))
        return false;
    if (line.compare(pos, 2, " (") != 0 || line.size() < pos + 2 + 10 + 3 + 20)
        return false;
    pos += 2;
    node.op = trimmed(line.substr(pos, 10));
    pos += 10;
    if (line.compare(pos, 3, "): ") != 0)
        return false;
    pos += 3;
    node.name = trimmed(line.substr(pos, 20));
    return true;
}

}  // namespace

const SchedSplit* SchedAssignment::split_of(int index) const {
    const SchedSplit* found = nullptr;
    for (const auto& s : splits) {
        if (s.first_node <= index)
            found = &s;
    }
    return found ? found : (splits.empty() ? nullptr : &splits.front());
}

SchedAssignment parse_sched_assignments(const std::string& text) {
    // The latest dump starts at the last "## SPLIT #0:".
    size_t start = text.rfind("## SPLIT #0:");
    if (start == std::string::npos)
        return {};
    std::istringstream in(text.substr(start));
    SchedAssignment a;
    std::string line;
    bool pending_start = false;  // a split header whose first node is not known yet
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        SchedSplit sp;
        if (parse_split(line, sp)) {
            if (sp.index != static_cast<int>(a.splits.size()))
                break;  // another dump interleaved
            sp.first_node = sp.index == 0 ? 0 : -1;
            pending_start = sp.index != 0;
            a.splits.push_back(sp);
            continue;
        }
        int index = 0;
        SchedNodeLine node;
        if (parse_node(line, index, node)) {
            a.nodes[index] = node;
            if (pending_start && !a.splits.empty()) {
                a.splits.back().first_node = index;
                pending_start = false;
            }
        }
    }
    // A trailing header without node lines (debug level 1): its start is unknown.
    while (!a.splits.empty() && a.splits.back().first_node < 0)
        a.splits.pop_back();
    return a;
}

bool sched_line_matches(const SchedNodeLine& line, const std::string& op, const std::string& name) {
    auto cut = [](const std::string& s, size_t n) {
        std::string t = s.substr(0, n);
        size_t a = 0, b = t.size();
        while (a < b && t[a] == ' ')
            ++a;
        while (b > a && t[b - 1] == ' ')
            --b;
        return t.substr(a, b - a);
    };
    return cut(op, 10) == line.op && cut(name, 20) == line.name;
}

}  // namespace sb
