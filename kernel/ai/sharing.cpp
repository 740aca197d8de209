// The sharing options of the AI service (sharing.h): their values and names.
#include "sharing.h"
#include "../string.h"

namespace ai {

PrefixShare prefix_share = PrefixShare::Session;
uint32_t preempt_gap = kDefaultPreemptGap;

const char* prefix_share_name(PrefixShare s) {
  switch (s) {
    case PrefixShare::Global: return "global";
    case PrefixShare::Off: return "off";
    case PrefixShare::Session: break;
  }
  return "session";
}

bool prefix_share_from_name(const char* name, PrefixShare* out) {
  static constexpr PrefixShare kAll[] = {PrefixShare::Session, PrefixShare::Global, PrefixShare::Off};
  for (PrefixShare s : kAll) {
    if (strcmp(name, prefix_share_name(s)) == 0) {
      *out = s;
      return true;
    }
  }
  return false;
}

}  // namespace ai
