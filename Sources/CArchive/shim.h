// libarchive: the ZIP files a school uploads (XLSX workbooks, folders of photos).
#include <archive.h>
#include <archive_entry.h>
#include <locale.h>

/* libarchive hands out names in the current locale's encoding: a UTF-8
 * one, made once, is used by the reading thread for the call only
 * (uselocale), not set for the process. */
static inline locale_t guidance_archive_utf8_locale(void) {
    static locale_t made;
    if (!made) made = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    return made;
}
