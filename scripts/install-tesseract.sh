#!/bin/sh
# Installs Tesseract OCR with its English and simplified-Chinese language packs from Debian's packages when missing,
# and a CJK font, which the OCR tests and bench/ocr_accuracy.py render Chinese pages with.
set -eu
have_langs() {
    langs=$(tesseract --list-langs 2>/dev/null) || return 1
    echo "$langs" | grep -qx eng && echo "$langs" | grep -qx chi_sim
}
have_font() {
    fc-list :lang=zh 2>/dev/null | grep -q .
}
if command -v tesseract >/dev/null 2>&1 && have_langs && have_font; then
    exit 0
fi
echo "installing Tesseract OCR (English, simplified Chinese) and a CJK font from Debian's packages"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim \
    fonts-noto-cjk fontconfig
