"""Shop: find and buy what an instruction asks for, WebShop style (``envgym/Shop-v0``
on a generated catalogue, ``envgym/WebShop-v0`` on WebShop's own files).

`catalogue` and `goals` generate the products and instructions, `webshop`
reads WebShop's JSON files, `index` is the BM25 search engine, `pages` and
`html` render the pages, `reward` is WebShop's reward, `shop` the env, `site`
the web site of ``envgym shop serve``.
"""

from envgym.envs.shop.shop import ShopEnv, ShopPreset

__all__ = ["ShopEnv", "ShopPreset"]
