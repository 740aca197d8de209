// Directories and path names. A directory is a file of kai_dirent records
// (inode number 0 marks a free slot); a path is resolved one element at a
// time from the root or the current directory.
//
// In this file:
//   for_each_dirent   the loop every directory operation is built on
//   dirlookup, dirlink, dir_is_empty
//   namei, nameiparent   path -> inode (or its parent and the last name)
//
// Locking: namex locks one directory at a time and lets go of it before it
// takes the next one, so a lookup of "." or ".." never deadlocks against
// itself; callers get the result referenced but unlocked.
#include "inode.h"
#include "bio.h"
#include "../proc.h"
#include "../string.h"

namespace fs {

namespace {
bool name_eq(const char* a, const char* b) { return strncmp(a, b, KAI_NAME_MAX + 1) == 0; }
}  // namespace

// Calls fn(entry, offset) for every slot of directory dp; fn returns true to stop.
template <typename Fn>
ErrorOr<bool> for_each_dirent(Inode* dp, Fn fn) {
  for (uint64_t off = 0; off < dp->size; off += BSIZE) {
    uint32_t addr = TRY(bmap(dp, off / BSIZE, false));
    if (addr == 0) continue;
    Buf* b = TRY(bread(dp->dev, addr));
    auto* de = reinterpret_cast<kai_dirent*>(b->data);
    uint64_t n = dp->size - off < BSIZE ? (dp->size - off) / sizeof(kai_dirent) : DPB;
    for (uint64_t i = 0; i < n; i++) {
      if (fn(de[i], off + i * sizeof(kai_dirent))) {
        brelse(b);
        return true;
      }
    }
    brelse(b);
  }
  return false;
}

ErrorOr<Inode*> dirlookup(Inode* dp, const char* name, uint64_t* poff) {
  if (dp->type != KAI_T_DIR) return Errno::NotDir;
  uint32_t inum = 0;
  uint64_t where = 0;
  bool found = TRY(for_each_dirent(dp, [&](const kai_dirent& de, uint64_t off) {
    if (de.inum == 0 || !name_eq(de.name, name)) return false;
    inum = de.inum;
    where = off;
    return true;
  }));
  if (!found) return Errno::NoEnt;
  if (poff) *poff = where;
  return iget(dp->dev, inum);
}

ErrorOr<void> dirlink(Inode* dp, const char* name, uint32_t inum) {
  if (auto existing = dirlookup(dp, name, nullptr); !existing.is_error()) {
    iput(existing.value());
    return Errno::Exists;
  }
  uint64_t slot = dp->size;
  TRY(for_each_dirent(dp, [&](const kai_dirent& de, uint64_t off) {
    if (de.inum != 0) return false;
    slot = off;
    return true;
  }));
  kai_dirent de{};
  de.inum = inum;
  strncpy(de.name, name, KAI_NAME_MAX);
  de.name[KAI_NAME_MAX] = 0;
  uint64_t n = TRY(writei(dp, false, reinterpret_cast<uint64_t>(&de), slot, sizeof(de)));
  if (n != sizeof(de)) return Errno::NoSpace;
  return {};
}

ErrorOr<bool> dir_is_empty(Inode* dp) {
  bool nonempty = TRY(for_each_dirent(dp, [&](const kai_dirent& de, uint64_t) {
    return de.inum != 0 && !name_eq(de.name, ".") && !name_eq(de.name, "..");
  }));
  return !nonempty;
}

// ---------------------------------------------------------------- path names
namespace {
// Copies the next element of path into name; returns the rest of the path
// (nullptr when there is no element). Elements longer than KAI_NAME_MAX fail.
ErrorOr<const char*> skipelem(const char* path, char* name) {
  while (*path == '/') path++;
  if (*path == 0) return static_cast<const char*>(nullptr);
  const char* s = path;
  while (*path != '/' && *path != 0) path++;
  uint64_t len = static_cast<uint64_t>(path - s);
  if (len > KAI_NAME_MAX) return Errno::NameTooLong;
  memcpy(name, s, len);
  name[len] = 0;
  while (*path == '/') path++;
  return path;
}

ErrorOr<Inode*> namex(const char* path, bool parent, char* name) {
  uint32_t dev = TRY(mounted_dev());
  if (*path == 0) return Errno::NoEnt;
  Inode* ip;
  Process* p = current_process();
  if (*path == '/' || !p || !p->cwd)
    ip = TRY(iget(dev, ROOT_INO));
  else
    ip = idup(p->cwd);
  for (;;) {
    auto next_path = skipelem(path, name);
    if (next_path.is_error()) {
      iput(ip);
      return next_path.error();
    }
    if (!next_path.value()) break;
    path = next_path.value();
    ilock(ip);
    if (ip->type != KAI_T_DIR) {
      iunlockput(ip);
      return Errno::NotDir;
    }
    if (parent && *path == 0) {
      iunlock(ip);
      return ip;   // stop one level early
    }
    auto next = dirlookup(ip, name, nullptr);
    iunlockput(ip);
    if (next.is_error()) return next.error();
    ip = next.value();
  }
  if (parent) {
    iput(ip);   // path had no last element ("/")
    return Errno::NoEnt;
  }
  return ip;
}
}  // namespace

ErrorOr<Inode*> namei(const char* path) {
  char name[KAI_NAME_MAX + 1];
  return namex(path, false, name);
}

ErrorOr<Inode*> nameiparent(const char* path, char* name) { return namex(path, true, name); }

}  // namespace fs
