// The distance chart and the head list sit below the main map: bring the opened head into view.
() => document.querySelector(`#${VIZVIT_IDS.ATTN_MAIN}`).scrollIntoView({block: 'center'})
