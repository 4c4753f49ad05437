"""`ragbot doctor`'s OCR line: Tesseract found with the packs OCR_LANGUAGES names, missing, or lacking a pack."""

from __future__ import annotations

from pathlib import Path

from bot.app.settings import Settings
from bot.cli.doctor import exit_code, ocr_finding


async def test_tesseract_with_the_named_packs_is_ok() -> None:
    finding = await ocr_finding(Settings(_env_file=None, OCR_LANGUAGES="eng+chi_sim"))
    assert (finding.part, finding.verdict) == ("ocr", "ok")
    assert "eng+chi_sim" in finding.detail


async def test_no_tesseract_is_missing_not_an_error_and_says_what_it_costs(tmp_path: Path) -> None:
    finding = await ocr_finding(Settings(_env_file=None, OCR_COMMAND=str(tmp_path / "tesseract")))
    assert finding.verdict == "missing"
    assert "photos sent with questions are refused" in finding.detail
    assert "make tesseract" in finding.fix
    assert exit_code([finding]) == 0


async def test_a_language_pack_that_is_not_installed_is_an_error_naming_its_package() -> None:
    finding = await ocr_finding(Settings(_env_file=None, OCR_LANGUAGES="eng+chi_tra"))
    assert finding.verdict == "error"
    assert "chi_tra" in finding.detail
    assert "tesseract-ocr-chi-tra" in finding.fix
    assert exit_code([finding]) == 1
