#include <vector>
#include <map>
#include <string>
#include <algorithm>
struct Point { int x, y; };
int total(const std::map<std::string, int>& m) {
  int s = 0;
  for (auto& [k, v] : m) s += v;
  return s;
}
int main() {
  std::vector<Point> pts{{1,2},{3,4}};
  std::sort(pts.begin(), pts.end());
  std::map<std::string, int> m;
  m[3] = 4;
  return total(pts);
}
