"""The generated catalogue's vocabulary: categories, product types, their attribute
pools, option groups, brands and price ranges, as one table parsed at import.

Table format (one block per category, then one block per product type):

    @ key | Breadcrumb Root | Brand, Brand, ...
    type phrase | Subcategory | low-high dollars | unit phrase (optional)
      attribute, attribute, ...; group: value, value, ...; group: value, ...

where the indented lines hold the attributes, then the option groups after ";"
(wrapped freely).

Rules that keep the reward's matching exact (tests/test_shop_catalogue.py checks
them over the whole table): within a type, no attribute's words are a subset of
another's and no option value's words are a subset of another value's (the
reward matches words subset-either-way); no attribute phrase occurs inside a
type phrase, a brand, an option value or the fixed template text (the reward
also finds attributes by substring in the title, bullets and description); type
phrases share no content words, so the type reward between two types is 0.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATEGORIES", "TYPES", "Category", "OptionGroup", "ProductType", "vocabulary"]


@dataclass(frozen=True)
class OptionGroup:
    """One option group ("size", "color", ...) and the values a product may offer."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class ProductType:
    """A kind of product: its phrase (the search query and type reward words), where
    it sits in the breadcrumb, its attribute pool, option groups and price range."""

    phrase: str
    category: str
    root: str
    subcategory: str
    price_low: int
    price_high: int
    unit: str
    attributes: tuple[str, ...]
    options: tuple[OptionGroup, ...]
    brands: tuple[str, ...]


@dataclass(frozen=True)
class Category:
    """A top-level category: its key, breadcrumb root, brands and product types."""

    key: str
    root: str
    brands: tuple[str, ...]
    types: tuple[ProductType, ...]


_TABLE = """
@ beauty | Beauty & Personal Care | Aurelle, Verdano, Lumisse, Caldera, Nivesse, Orrin
eau de toilette | Fragrance | 18-140 | bottle of
  long lasting, alcohol free, unisex, cruelty free, vegan, refillable, gift boxed, travel friendly
  paraben free; size: 0.5 fl oz, 1 fl oz, 1.7 fl oz, 3.4 fl oz, 6.76 fl oz
  scent: citrus, lavender, sandalwood, vanilla, jasmine, amber
  pack: single bottle, pack of 2, pack of 3, gift set
face moisturizer | Skin Care | 8-60 | jar of
  oil free, fragrance free, spf 30, hyaluronic acid, for sensitive skin, non comedogenic
  dermatologist tested, anti aging, lightweight texture
  size: 1.7 fl oz, 2.5 fl oz, 4 fl oz, 8 fl oz
shampoo | Hair Care | 6-45 | bottle of
  sulfate free, color safe, volumizing, anti dandruff, silicone free, tea tree, for curly hair
  moisturizing, salon quality; size: 8 fl oz, 12 fl oz, 16.9 fl oz, 33.8 fl oz
  pack: single bottle, pack of 2, pack of 3, pack of 4
lipstick | Makeup | 7-38
  matte finish, long wearing, transfer proof, hydrating, high pigment, smudge proof, satin finish
  paraben free; color: nude, classic red, berry, coral, mauve, plum
@ grocery | Grocery & Gourmet Food | Harvestly, Kettlebrook, Sunfold, Pinecrest, Wildmeadow
protein bar | Snacks | 12-45 | box of
  gluten free, low sugar, high fiber, keto friendly, plant based, non gmo, soy free
  no artificial sweeteners
  flavor: chocolate, peanut butter, cookie dough, salted caramel, birthday cake, mint chip
  count: 6 count, 12 count, 15 count, 24 count
ground coffee | Beverages | 9-40 | bag of
  single origin, fair trade, organic, low acid, artisan made, rainforest alliance, kosher
  freshly roasted; roast: light roast, medium roast, dark roast, espresso roast
  size: 10 ounce, 12 ounce, 24 ounce, 2 pound
olive oil | Pantry | 9-55 | bottle of
  extra virgin, cold pressed, single estate, unfiltered, organic, kosher, high polyphenol, non gmo
  size: 16.9 fl oz, 25.4 fl oz, 33.8 fl oz, 101 fl oz
loose leaf tea | Beverages | 7-35 | tin of
  caffeine free, organic, hand picked, antioxidant rich, resealable pouch, kosher, artisan made
  non gmo; flavor: earl grey, chamomile, sencha, peppermint, chai spice, hibiscus
  size: 2 ounce, 4 ounce, 8 ounce, 16 ounce
beef jerky | Snacks | 8-40 | bag of
  high protein, low carb, grass fed, no nitrites, gluten free, keto friendly, msg free, artisan made
  flavor: original, teriyaki, black pepper, sweet and spicy, hickory smoked
  size: 2.5 ounce, 3.25 ounce, 8 ounce, 16 ounce
@ electronics | Electronics | Sonique, Voltara, Brightwave, Arcline, Nexora, Tekko
wireless earbuds | Headphones | 20-250 | pair of
  noise cancelling, water resistant, long battery life, fast charging, touch controls, low latency
  sweat resistant, hi res audio, charging case included; color: black, white, navy, graphite, sage
  ear tips: small tips, medium tips, large tips, foam tips
bluetooth speaker | Audio | 18-300
  portable, waterproof, deep bass, 360 degree sound, dustproof, long battery life, stereo pairing
  shockproof; color: black, red, teal, charcoal, sand
phone charger | Accessories | 8-60
  fast charging, foldable plug, dual port, gan technology, overheat protection, compact design
  universal compatibility, cable included, led indicator; wattage: 20w, 30w, 45w, 65w, 100w
  color: black, white, gray, blue
hdmi cable | Cables | 6-40
  braided, 8k ultra hd, gold plated, high speed, ethernet support, right angle, earc compatible
  tangle resistant; length: 3 ft, 6 ft, 10 ft, 15 ft, 25 ft; pack: 1 pack, 2 pack, 3 pack, 5 pack
  color: black, white, gray, red
@ clothing | Clothing | Northway, Ridgefield, Marlow, Tessera, Fieldhouse, Linden
t-shirt | Tops | 8-40
  crew neck, v neck, moisture wicking, relaxed fit, tagless, pre shrunk, short sleeve
  machine washable, organic cotton; size: small, medium, large, xl, xxl
  color: black, white, heather gray, navy, olive green, maroon
  cut: slim cut, classic cut, tall cut, boxy cut
hoodie | Tops | 20-70
  fleece lined, zip up, kangaroo pocket, drawstring hood, relaxed fit, pill resistant
  machine washable, heavyweight; size: small, medium, large, xl, xxl
  color: black, charcoal, forest green, navy, oatmeal; style: pullover, full zip, half zip, cropped
leggings | Activewear | 12-60 | pair of
  high waisted, squat proof, side pockets, four way stretch, moisture wicking, tummy control
  buttery soft, seamless; size: small, medium, large, xl
  color: black, navy, plum, olive green, slate; inseam: 25 inch, 28 inch, 31 inch, 33 inch
winter jacket | Outerwear | 45-260
  water resistant, detachable hood, down insulated, windproof, packable, fleece lined
  multiple pockets, thermal lining; size: small, medium, large, xl, xxl
  color: black, navy, burgundy, camel, forest green
  length: hip length, mid thigh, knee length, cropped length
crew socks | Socks | 8-30 | pack of
  cushioned sole, arch support, moisture wicking, breathable, odor resistant, merino wool
  reinforced heel, seamless toe, athletic fit; size: small, medium, large, xl
  pack: 3 pairs, 6 pairs, 10 pairs, 12 pairs
@ home | Home & Kitchen | Hearthline, Copperfield, Oakhaven, Brightnest, Kitchora
frying pan | Cookware | 18-140
  nonstick, induction compatible, oven safe, dishwasher safe, pfoa free, stay cool handle, tri ply
  hard anodized; size: 8 inch, 10 inch, 12 inch, 14 inch
  material: stainless steel, cast iron, ceramic, carbon steel
  pack: single pan, 2 piece set, 3 piece set, 5 piece set
knife set | Cutlery | 25-300
  german steel, full tang, ergonomic handles, rust resistant, razor sharp, dishwasher safe
  forged blades, wooden block included; count: 6 piece, 8 piece, 12 piece, 15 piece
  color: black, silver, walnut, white
bath towel | Bath | 12-80 | set of
  quick drying, highly absorbent, turkish cotton, oeko tex certified, extra soft, lint free
  fade resistant, hotel quality; color: white, gray, navy, sage, blush
  pack: set of 2, set of 3, set of 4, set of 6; size: bath sheet, hand towel, washcloth, standard
throw pillow | Decor | 10-60
  removable cover, hidden zipper, down alternative, hypoallergenic, machine washable, velvet
  linen blend, decorative fringe; size: 16x16 inch, 18x18 inch, 20x20 inch, 12x20 inch
  color: ivory, mustard, teal, burnt orange, blush, charcoal
  fill: polyester, feather, cover only, buckwheat
@ pet | Pet Supplies | Whiskerly, Tailwind, Furrow, Pawtree, Snoutly
dog food | Dogs | 15-90 | bag of
  grain free, high protein, limited ingredient, for toy breeds, omega rich
  no artificial preservatives, made in usa, sensitive stomach
  flavor: chicken, salmon, lamb, turkey, duck; size: 4 pound, 12 pound, 24 pound, 30 pound
  life stage: puppy, adult, senior, all life stages
cat litter | Cats | 10-45 | bag of
  clumping, fragrance free, low dust, odor control, lightweight, flushable, multi cat, natural clay
  size: 10 pound, 20 pound, 28 pound, 40 pound
aquarium filter | Fish | 12-120
  quiet operation, adjustable flow, three stage filtration, freshwater safe, easy maintenance
  energy efficient, submersible, bio media included
  capacity: 10 gallon, 20 gallon, 40 gallon, 75 gallon, 100 gallon
hamster cage | Small Animals | 25-120
  escape proof, easy to assemble, chew proof, deep base, includes wheel, portable, spacious
  two levels; color: white, pink, blue, black, purple
@ sports | Sports & Outdoors | Summitra, Peakform, Stridex, Ironvale, Kestrel
yoga mat | Fitness | 15-90
  non slip, extra thick, eco friendly, carrying strap, alignment lines, sweat resistant, latex free
  reversible; color: purple, black, teal, pink, gray; thickness: 4mm, 6mm, 8mm, 10mm
  length: standard 68 inch, long 72 inch, extra long 84 inch, 96 inch
hex dumbbells | Strength | 20-300 | pair of
  rubber coated, knurled handle, anti roll, floor friendly, sold in pairs, commercial grade
  ergonomic grip, hexagonal head, space saving; weight: 5 lb, 10 lb, 15 lb, 20 lb, 25 lb, 30 lb
camping tent | Camping | 50-400
  waterproof, easy setup, rainfly included, three season, ultralight, mesh windows, freestanding
  double wall; capacity: 1 person, 2 person, 4 person, 6 person; color: green, orange, gray, blue
water bottle | Hydration | 10-50
  vacuum insulated, leak proof, bpa free, dishwasher safe, straw lid, wide mouth, powder coated
  condensation free; size: 18 oz, 24 oz, 32 oz, 40 oz, 64 oz
  color: black, white, lilac, ocean, sunflower; lid: chug cap, spout lid, flip top, sport cap
@ toys | Toys & Games | Playfield, Tinkertop, Marbleway, Joyvale, Bramblewood
building blocks | Construction | 15-120 | set of
  stem educational, bpa free, storage box included, compatible with major brands, creative play
  for ages 6 and up, colorful, gift ready, instructions included
  pieces: 100 pieces, 250 pieces, 500 pieces, 1000 pieces
jigsaw puzzle | Puzzles | 10-40
  thick pieces, glare free, random cut, poster included, family friendly, recycled cardboard
  precision fit, made in usa, sturdy box; pieces: 300 pieces, 500 pieces, 1000 pieces, 2000 pieces
plush animal | Stuffed Animals | 8-45
  super soft, machine washable, hypoallergenic, weighted, embroidered eyes, gift ready, for toddlers
  lifelike design, surface washable; size: 8 inch, 12 inch, 16 inch, 24 inch
  style: bear, bunny, elephant, dinosaur, unicorn, sloth
board game | Games | 15-70
  strategy, cooperative, family friendly, quick to learn, award winning, expansion ready
  for 2 to 4 players, easy setup, replayable
  edition: standard edition, deluxe edition, collector edition, travel edition
@ office | Office Products | Deskmate, Papyra, Ledgerline, Quillon, Officio
gel pens | Writing | 6-35 | pack of
  quick dry, fine point, smooth writing, smear proof, retractable, comfort grip, acid free
  refillable; color: black ink, blue ink, red ink, assorted colors
  count: 6 pack, 12 pack, 24 pack, 36 pack; tip: 0.38 mm, 0.5 mm, 0.7 mm, 1.0 mm
spiral notebook | Paper | 5-30
  college ruled, wide ruled, perforated pages, thick paper, pocket dividers, bleed resistant
  recycled paper, elastic closure, durable cover
  size: 5 x 8 inch, 6 x 9 inch, 7 x 10 inch, 8.5 x 11 inch
  pack: single notebook, pack of 3, pack of 5, pack of 10
desk organizer | Organization | 12-60
  mesh metal, bamboo, multiple compartments, drawer included, rotating, space saving, sturdy base
  non slip feet, pen holder; color: black, white, natural wood, silver
stapler | Supplies | 8-45
  jam free, heavy duty, 20 sheet capacity, low force, built in remover, compact, spring loaded
  staples included, ergonomic design; color: black, gray, red, blue
@ automotive | Automotive | Roadmark, Gearline, Torqueon, Autovia, Drivewell
seat cover | Interior | 20-120 | set of
  universal fit, airbag compatible, waterproof, faux leather, easy install, breathable mesh
  non slip backing, machine washable, easy to clean; color: black, gray, beige, tan
  set: front pair, full set, single seat, rear bench
wiper blades | Exterior | 10-45 | pair of
  all season, beam style, streak free, quiet operation, easy install, rubber, winter ready
  uv resistant, aerodynamic; size: 16 inch, 18 inch, 20 inch, 22 inch, 24 inch, 26 inch
tire inflator | Tools & Equipment | 25-90
  battery powered, digital gauge, auto shut off, built in light, 150 psi, compact, multiple nozzles
  lcd display, preset pressure; power: car outlet, built in battery, dual power, wall adapter
car wax | Car Care | 10-40 | tub of
  sio2 infused, hydrophobic, uv protection, streak free, easy wipe off, safe on clear coat, carnauba
  paste formula, applicator included; size: 8 oz, 11 oz, 16 oz, 20 oz
@ garden | Patio, Lawn & Garden | Greenhaven, Fernwell, Rootstock, Bloomfield, Meadowlark
garden hose | Watering | 20-90
  kink free, expandable, lightweight, brass fittings, burst resistant, drinking water safe
  uv resistant, flexible; length: 25 ft, 50 ft, 75 ft, 100 ft
pruning shears | Garden Tools | 10-50 | pair of
  bypass blade, titanium coated, safety lock, rust proof, spring loaded, ergonomic grip, heavy duty
  sap groove, non stick coating; color: red, green, orange, black
bird feeder | Birding | 15-80
  squirrel proof, weather resistant, easy to fill, hanging, high capacity, easy to clean, metal roof
  seed tray, pole mountable; capacity: 2 pound, 4 pound, 6 pound, 8 pound
planter | Planters | 12-80
  drainage hole, self watering, frost resistant, indoor outdoor, with saucer, lightweight, glazed
  uv stable, handmade; size: 6 inch, 8 inch, 10 inch, 12 inch
  color: white, terracotta, black, sage, blush
@ baby | Baby | Littlenest, Cuddlebee, Tinytrail, Softsprout, Babbleby
stroller | Strollers | 80-450
  one hand fold, all terrain, reclining seat, roomy storage basket, adjustable handlebar
  lightweight, travel system, sun canopy; color: black, gray, navy, olive green
  model: standard, tandem, jogger, lite
diapers | Diapering | 15-60 | pack of
  hypoallergenic, wetness indicator, fragrance free, overnight protection, plant based, ultra soft
  chlorine free, stretchy sides, umbilical cord notch
  size: newborn, size 1, size 2, size 3, size 4, size 5
  count: 32 count, 64 count, 120 count, 180 count
crib sheet | Nursery | 10-40
  organic cotton, breathable, jersey knit, fade resistant, machine washable, ultra soft
  hypoallergenic, deep pockets, elastic all around
  pattern: plain, stars, stripes, floral, dinosaurs; pack: 1 pack, 2 pack, 3 pack, 4 pack
  size: standard crib, mini crib, pack n play, bassinet
teether | Teething | 6-25
  bpa free, food grade silicone, freezer safe, easy to hold, dishwasher safe, textured
  natural rubber, soothing, easy to clean; color: mint, peach, lavender, sky blue, mustard
@ health | Health & Household | Vitalyn, Medora, Curavia, Wellspring, Salvina
multivitamin | Vitamins | 8-50 | bottle of
  gluten free, vegan, for women, for men, non gmo, whole food, once daily, third party tested
  count: 60 count, 90 count, 120 count, 180 count; form: capsules, tablets, gummies, softgels
electric toothbrush | Oral Care | 20-200
  rechargeable, pressure sensor, 2 minute timer, travel case, smart app, whitening, sonic
  waterproof; color: black, white, pink, blue
first aid kit | First Aid | 12-80
  waterproof case, compact, emergency blanket, fda approved, for camping, for vehicles
  fully stocked, reusable, cpr mask included; count: 100 piece, 200 piece, 300 piece, 400 piece
hand sanitizer | Hygiene | 5-30 | bottle of
  moisturizing, with aloe, fragrance free, travel size, kills germs, no rinse, dermatologist tested
  non sticky, vitamin e; size: 2 fl oz, 8 fl oz, 12 fl oz, 33.8 fl oz
  pack: single bottle, pack of 3, pack of 6, pack of 12
@ tools | Tools & Home Improvement | Boltcraft, Anvilo, Ruggio, Steelmark, Forgeline
cordless drill | Power Tools | 40-250
  brushless motor, two batteries, led work light, keyless chuck, variable speed, compact
  carrying case, belt clip, battery indicator; voltage: 12v, 18v, 20v, 24v
power screwdriver | Hand Tools | 15-80
  magnetic tip, ratcheting, interchangeable bits, usb rechargeable, ergonomic handle, compact
  led light, torque control, storage case; count: 10 bit, 32 bit, 48 bit, 64 bit
tape measure | Measuring | 6-35
  magnetic hook, auto lock, belt clip, fraction markings, impact resistant, extra wide blade
  standout reach, metric and imperial; length: 16 ft, 25 ft, 30 ft, 35 ft
flashlight | Lighting | 8-60
  rechargeable, 1000 lumens, zoomable, waterproof, tactical, magnetic base, multiple modes
  usb c charging, pocket clip; color: black, olive green, orange, camo, red
  battery: aa, aaa, 18650, cr123a
@ jewelry | Jewelry | Aurenza, Lucielle, Corvina, Solara, Vantelle
pendant necklace | Necklaces | 20-300
  hypoallergenic, nickel free, adjustable chain, gift box, personalized, dainty, handmade
  tarnish resistant, birthstone; metal: yellow gold, white gold, rose gold, sterling silver
  length: 16 inch, 18 inch, 20 inch, 22 inch
stud earrings | Earrings | 15-250 | pair of
  hypoallergenic, nickel free, screw back, cubic zirconia, gift box, minimalist, lab grown diamond
  tarnish resistant, handmade; metal: yellow gold, white gold, rose gold, sterling silver, platinum
charm bracelet | Bracelets | 18-200
  adjustable, hypoallergenic, gift box, personalized, stackable, handmade, lobster clasp
  tarnish resistant, dainty; metal: yellow gold, white gold, rose gold, sterling silver
  size: 6 inch, 6.5 inch, 7 inch, 7.5 inch, 8 inch
cocktail ring | Rings | 25-400
  statement, hypoallergenic, gift box, vintage inspired, halo setting, handmade, tarnish resistant
  comfort fit, personalized; metal: yellow gold, white gold, rose gold, sterling silver
  size: ring size 5, ring size 6, ring size 7, ring size 8, ring size 9
@ shoes | Shoes | Stridewell, Solecraft, Trekkor, Pacelane, Cobbleton
running shoes | Athletic | 40-180 | pair of
  lightweight, breathable mesh, cushioned midsole, wide toe box, reflective, arch support
  slip resistant, carbon plate; size: us 7, us 8, us 9, us 10, us 11, us 12
  color: black, white, gray, navy, neon yellow; width: d medium, 2e wide, 4e extra wide, b narrow
ankle boots | Boots | 50-220 | pair of
  genuine leather, side zipper, block heel, waterproof, memory foam insole, slip resistant
  vegan leather, pointed toe, cushioned insole; size: us 6, us 7, us 8, us 9, us 10
  color: black, cognac, taupe, chocolate brown
slippers | Slippers | 12-60 | pair of
  memory foam, faux fur lining, non skid sole, indoor outdoor, machine washable, open toe, slip on
  warm lining; size: small, medium, large, xl; color: gray, pink, navy, cream
sandals | Sandals | 15-90 | pair of
  arch support, adjustable straps, quick drying, waterproof, cushioned footbed, vegan leather
  lightweight, ankle strap, toe post; size: us 6, us 7, us 8, us 9, us 10, us 11
  color: black, tan, white, brown
@ furniture | Furniture | Oakline, Tavora, Brenwood, Homestead, Lofton
office chair | Chairs | 60-450
  ergonomic, lumbar support, adjustable armrests, mesh back, swivel, headrest, reclining
  easy assembly; color: black, gray, white, blue
  base: nylon base, aluminum base, chrome base, wood base
bookshelf | Storage | 40-300
  five tier, solid wood, wall anchor, adjustable shelves, industrial style, easy assembly
  space saving, anti tip hardware, open back; color: walnut, black, white, oak
side table | Living Room | 25-180
  round top, storage shelf, solid wood, marble top, easy assembly, mid century, metal frame
  charging station, nesting; color: black, white, walnut, oak
floor lamp | Lighting | 30-220
  dimmable, led bulb included, foot switch, arc design, adjustable head, remote control, linen shade
  energy efficient, three way switch; color: black, antique brass, white, bronze
@ luggage | Luggage & Travel | Voyagio, Trekline, Jetwell, Roamly, Wayfarer
carry-on suitcase | Suitcases | 60-400
  hardside, spinner wheels, tsa lock, expandable, usb port, lightweight, scratch resistant
  laptop sleeve; color: black, silver, navy, emerald, champagne
backpack | Backpacks | 25-180
  laptop sleeve, water resistant, anti theft, usb port, padded straps, lightweight, hidden pocket
  luggage strap, bottle pocket; color: black, gray, navy, olive green, burgundy
  capacity: 20l, 25l, 30l, 40l; style: classic, rolltop, sling, daypack
duffel bag | Duffels | 20-150
  shoe compartment, water resistant, foldable, detachable strap, lightweight, high capacity
  wet pocket, carry on size, vegan leather; color: black, navy, olive green, gray
  capacity: 30l, 40l, 60l, 80l
packing cubes | Travel Accessories | 12-50 | set of
  compression, lightweight, mesh panels, water resistant, laundry bag included, double zipper
  labeled, travel friendly, machine washable; count: 3 piece, 4 piece, 6 piece, 8 piece
  color: black, navy, teal, gray
@ instruments | Musical Instruments | Harmonia, Cadenza, Lyricor, Tempo Ridge, Stringhold
acoustic guitar | Guitars | 90-600
  solid spruce top, cutaway, built in tuner, beginner kit, gig bag included, low action
  rosewood fretboard, truss rod, pickup equipped
  size: full size, 3/4 size, parlor size, dreadnought size
  color: natural finish, sunburst, black, cherry
  bundle: guitar only, with case, starter bundle, pro bundle
ukulele | Ukuleles | 30-200
  mahogany body, aquila strings, gig bag included, beginner kit, laminated top, built in tuner
  geared tuners, lightweight; size: soprano, concert, tenor, baritone
digital piano | Keyboards | 200-900
  weighted keys, 88 keys, sustain pedal included, bluetooth midi, headphone jack, built in speakers
  portable, lesson mode, usb midi; color: black, white, dark rosewood, oak
drum sticks | Drums | 8-40 | pair of
  hickory wood, nylon tip, wood tip, anti slip grip, lacquer finish, matched pairs, maple
  balanced feel; size: 5a, 7a, 5b, 2b; pack: 1 pair, 3 pairs, 4 pairs, 12 pairs
@ arts | Arts, Crafts & Sewing | Palettio, Brushwick, Canvasa, Inkmere, Crafton
acrylic paint | Painting | 10-60 | set of
  non toxic, fast drying, high pigment, water based, artist grade, matte finish, lightfast
  blendable, opaque; count: 12 colors, 24 colors, 36 colors, 48 colors
  size: 2 fl oz, 4 fl oz, 8 fl oz, 16 fl oz
sketchbook | Drawing | 8-35
  acid free, spiral bound, hardcover, heavyweight paper, mixed media, lay flat, perforated pages
  elastic band, pocket size; size: 5.5 x 8.5 inch, 8 x 10 inch, 9 x 12 inch, 11 x 14 inch
yarn | Knitting | 6-45 | pack of
  soft acrylic, merino wool, machine washable, chunky weight, anti pilling, hypoallergenic, vegan
  easy care, colorfast; color: cream, charcoal, burnt orange, sage, dusty rose
  pack: 1 skein, 3 skeins, 6 skeins, 10 skeins
colored pencils | Drawing | 8-60 | set of
  oil based, soft core, pre sharpened, artist grade, blendable, break resistant, tin case, vibrant
  non toxic; count: 24 count, 48 count, 72 count, 120 count
@ computers | Computers | Bitforge, Keystar, Pixelon, Datavex, Quantia
gaming mouse | Mice | 15-120
  rgb lighting, programmable buttons, adjustable dpi, lightweight, ergonomic, wired, low latency
  side grips, onboard memory; color: black, white, pink, lavender
mechanical keyboard | Keyboards | 40-220
  hot swappable, rgb backlit, tenkeyless, bluetooth connectivity, detachable cable, keycap puller
  aluminum frame, n key rollover, dedicated media keys
  switch: red switches, brown switches, blue switches, silent switches
  color: black, white, gray, pink
flash drive | Storage | 6-60
  usb 3.2, metal casing, keychain loop, password protection, fast transfer, compact, dual connector
  shock resistant, plug and play; capacity: 32gb, 64gb, 128gb, 256gb, 512gb
webcam | Cameras | 25-180
  1080p, 4k, auto focus, privacy cover, dual microphones, low light correction, wide angle
  plug and play; color: black, white, gray, silver
@ household | Household Supplies | Freshlyn, Tidewell, Sparkwick, Cleanora, Purebright
laundry detergent | Laundry | 8-40 | bottle of
  free and clear, plant based, high efficiency, concentrated, stain fighting, hypoallergenic
  cold water, septic safe, dye free; size: 50 fl oz, 92 fl oz, 150 fl oz, 200 fl oz
  scent: unscented, lavender, fresh linen, citrus, ocean breeze
  form: liquid, pods, granules, sheets
dish soap | Dishwashing | 4-25 | bottle of
  plant based, grease cutting, phosphate free, gentle on hands, biodegradable, concentrated
  refillable, dye free, septic safe; scent: unscented, lemon, lavender, grapefruit
  size: 16 fl oz, 22 fl oz, 38 fl oz, 60 fl oz
sponges | Cleaning Tools | 5-25 | pack of
  non scratch, heavy duty, quick drying, odor resistant, plant based, dual sided, compostable
  multi purpose; count: 6 count, 12 count, 24 count, 48 count
air freshener | Air Care | 6-35
  plug in, long lasting, essential oils, phthalate free, odor eliminating, adjustable intensity
  refillable, auto timer; scent: lavender, vanilla, ocean breeze, fresh linen, eucalyptus
  pack: 1 pack, 2 pack, 4 pack, 6 pack
"""


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _parse(table: str) -> tuple[Category, ...]:
    categories = []
    for block in table.strip().split("@ ")[1:]:
        head, *lines = block.strip().splitlines()
        key, root, brand_text = (part.strip() for part in head.split("|"))
        brands, rows = _split(brand_text), []
        for line in lines:
            if not line.startswith(" "):
                phrase, subcategory, prices, *unit = (part.strip() for part in line.split("|"))
                low, high = (int(p) for p in prices.split("-"))
                rows.append((phrase, subcategory, low, high, unit[0] if unit else "", [], []))
                continue
            for segment in line.split(";"):
                if ":" in segment:
                    name, values = segment.split(":", 1)
                    rows[-1][6].append(OptionGroup(name.strip(), _split(values)))
                else:
                    rows[-1][5].extend(_split(segment))
        types = tuple(
            ProductType(
                phrase, key, root, sub, low, high, unit, tuple(attrs), tuple(groups), brands
            )
            for phrase, sub, low, high, unit, attrs, groups in rows
        )
        categories.append(Category(key, root, brands, types))
    return tuple(categories)


CATEGORIES: tuple[Category, ...] = _parse(_TABLE)
"""Every category, in table order (the order is part of the catalogue's content)."""

TYPES: tuple[ProductType, ...] = tuple(t for c in CATEGORIES for t in c.types)
"""Every product type; a product's type id is its position here."""


def vocabulary() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The type phrases, attribute phrases and option values of the whole table, each
    without repeats, in table order."""
    attributes = (a for t in TYPES for a in t.attributes)
    values = (v for t in TYPES for g in t.options for v in g.values)
    return (
        tuple(t.phrase for t in TYPES),
        tuple(dict.fromkeys(attributes)),
        tuple(dict.fromkeys(values)),
    )
