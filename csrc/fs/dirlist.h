/* Listing storage shared by the backends and the binding: entries and the
 * arena holding their names. */
#ifndef SB_FS_DIRLIST_H
#define SB_FS_DIRLIST_H

#include "fs/backend.h"

/* Keep a listing's storage bounded between calls. */
void sb_dirlist_reset(const sb_mem *m, sb_dirlist *dl);
/* Append an entry (its name_off into dl->names, or name already set). 0 or -1 (OOM). */
int sb_dirlist_push(const sb_mem *m, sb_dirlist *dl, const sb_dirent *ent);
/* Entries from `from` on get their name pointers from their offsets. */
void sb_dirlist_fix_names(sb_dirlist *dl, size_t from);
void sb_dirlist_free(const sb_mem *m, sb_dirlist *dl);
void sb_dirlist_sort(sb_dirlist *dl);
/* Stable sort by name, then keep the first of equal names. 0 or -1 (OOM). */
int sb_dirlist_unique(const sb_mem *m, sb_dirlist *dl);

#endif
