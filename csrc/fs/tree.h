/* Removing a directory tree through held fds, never following a symlink:
 * every level is opened O_NOFOLLOW from its parent fd and its entries are
 * unlinked in that fd; a directory swapped for a symlink mid-walk loses only
 * the link. Shared by the container backend and the private temp dirs.
 * Copying (a directory moved where rename cannot: across an overlay's
 * layers) walks the same way. */
#ifndef SB_FS_TREE_H
#define SB_FS_TREE_H

#include <stdint.h>
#include <sys/types.h>

/* Empty parent/name (the directory itself is kept). Returns 0 or an errno;
 * *freed counts the bytes of regular files removed. */
int sb_tree_empty(int parent, const char *name, uint64_t *freed);
/* Empty it and remove it (as `rm -r`: a directory that cannot be read
 * is removed only if empty). */
int sb_tree_remove(int parent, const char *name, uint64_t *freed);
/* The same for a tree the sandbox owns (its temporary state, the private
 * /tmp of its commands): what a command made unreadable or unwritable
 * (chmod 000, overlayfs's work/work) is made its owner's again and goes too. */
int sb_tree_remove_own(int parent, const char *name, uint64_t *freed);
/* Copy the directory sparent/sname to dparent/dname (which must not exist):
 * directories, regular files and links, modes kept; nothing followed. 0 or
 * an errno (what was copied so far stays). */
int sb_tree_copy(int sparent, const char *sname, int dparent, const char *dname);
/* Copy the regular file sparent/sname to dparent/dname (made, with mode). 0 or an errno. */
int sb_tree_copy_file(int sparent, const char *sname, int dparent, const char *dname, mode_t mode);

#endif
