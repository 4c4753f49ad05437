#!/bin/sh
# Installs Tesseract OCR with its English and simplified-Chinese language packs and its orientation and script
# detection (osd) from Debian's packages when missing; jbig2dec, with which pypdf decodes the JBIG2 images most
# office scanners write into PDFs; and, with the argument `test`, a CJK font, which the OCR tests and
# bench/ocr_accuracy.py render Chinese with (`make run` needs no font).
set -eu
fonts=""
[ "${1:-}" = "test" ] && fonts="fonts-noto-cjk fontconfig"
have_langs() {
    langs=$(tesseract --list-langs 2>/dev/null) || return 1
    echo "$langs" | grep -qx eng && echo "$langs" | grep -qx chi_sim && echo "$langs" | grep -qx osd
}
have_font() {
    [ -z "$fonts" ] || fc-list :lang=zh 2>/dev/null | grep -q .
}
if command -v tesseract >/dev/null 2>&1 && command -v jbig2dec >/dev/null 2>&1 && have_langs && have_font; then
    exit 0
fi
echo "installing Tesseract OCR (English, simplified Chinese) and jbig2dec${fonts:+ and a CJK font} from Debian's packages"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-osd \
    jbig2dec $fonts
